/*
 * clockshim: a preload library that gives one process its own wall clock.
 *
 * Loaded with LD_PRELOAD, it overrides clock_gettime (CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE only; MONOTONIC and the others pass through),
 * gettimeofday and time. The process's wall clock is
 *
 *   wall = real + offset + (real - ref) * (rate - 1)      (drift)
 *
 * and, when a strobe period is set, the offset applies only in the even
 * periods counted from ref (the clock flips between offset and true time).
 * The state is a small file named by LOCKLAB_CLOCK_FILE, mapped shared and
 * read on every call, so the harness changes the clock of a running
 * process by writing the file (package clockshim, clockshim.go, is the
 * writer and documents the layout).
 *
 * It allocates nothing and resolves no symbol at run time (no malloc, no
 * dlsym, no stdio): jemalloc in redis-server reads the clock during its
 * own initialisation, before a library that allocates or resolves symbols
 * could run (libfaketime hangs there). The real time comes from glibc's
 * __clock_gettime, the function behind clock_gettime (the vDSO, about
 * 80 ns a call here, where a raw clock_gettime syscall costs about 1 us);
 * the file is opened and mapped with raw syscalls. Without the variable,
 * or when the file cannot be mapped, the clock is the real one.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CLOCK_MAGIC 0x314b434f4c434c4cULL /* "LLCLOCK1" little-endian */
#define NS 1000000000LL

/* The file's layout: eight 8-byte fields, written by one harness under a
 * sequence counter (odd while a write is in progress). */
struct clock_state {
	uint64_t magic;
	uint64_t seq;
	int64_t offset_ns;
	int64_t rate_ppb; /* 1000000000: the real rate; 0 reads as 1e9 */
	int64_t ref_ns;   /* real wall time drift and strobe count from */
	int64_t period_ns; /* strobe: > 0 flips the offset every period */
	int64_t spare[2];
};

#define UNSET ((struct clock_state *)0)
#define NONE ((struct clock_state *)1)

static struct clock_state *state = UNSET;

/* glibc's own clock_gettime under its internal name (GLIBC_PRIVATE): the
 * library is built on the machine it runs on, against that glibc. */
extern int __clock_gettime(clockid_t clk, struct timespec *ts);

static struct clock_state *load(void)
{
	struct clock_state *s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (s != UNSET)
		return s;
	struct clock_state *found = NONE;
	const char *path = getenv("LOCKLAB_CLOCK_FILE");
	if (path && *path) {
		long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && (syscall(SYS_fstat, fd, &st) != 0 || st.st_size < (off_t)sizeof(struct clock_state))) {
			/* a short file would fault on access */
			syscall(SYS_close, fd);
			fd = -1;
		}
		if (fd >= 0) {
			long p = syscall(SYS_mmap, 0, sizeof(struct clock_state), PROT_READ, MAP_SHARED, fd, 0);
			syscall(SYS_close, fd);
			if (p != -1 && ((struct clock_state *)p)->magic == CLOCK_MAGIC)
				found = (struct clock_state *)p;
			else if (p != -1)
				syscall(SYS_munmap, p, sizeof(struct clock_state));
		}
	}
	struct clock_state *expected = UNSET;
	if (!__atomic_compare_exchange_n(&state, &expected, found, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* another thread won: keep its mapping */
		if (found != NONE)
			syscall(SYS_munmap, found, sizeof(struct clock_state));
		return expected;
	}
	return found;
}

/* shift returns how far the process's wall clock is from real (ns). */
static int64_t shift(int64_t real)
{
	struct clock_state *s = load();
	if (s == NONE)
		return 0;
	int64_t off, rate, ref, period;
	for (int tries = 0;; tries++) {
		/* A writer that died in the middle of a write leaves seq odd:
		 * after many tries the clock is the real one rather than a hang. */
		if (tries == 100000)
			return 0;
		uint64_t s1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		off = __atomic_load_n(&s->offset_ns, __ATOMIC_RELAXED);
		rate = __atomic_load_n(&s->rate_ppb, __ATOMIC_RELAXED);
		ref = __atomic_load_n(&s->ref_ns, __ATOMIC_RELAXED);
		period = __atomic_load_n(&s->period_ns, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == s1)
			break;
	}
	int64_t d = 0;
	if (rate != 0 && rate != NS)
		d = (int64_t)(((__int128)(real - ref) * (rate - NS)) / NS);
	if (period > 0 && real >= ref && ((real - ref) / period) % 2 == 1)
		off = 0;
	return off + d;
}

static int wall(clockid_t clk, struct timespec *ts)
{
	int r = __clock_gettime(clk, ts);
	if (r != 0)
		return r;
	int64_t real = (int64_t)ts->tv_sec * NS + ts->tv_nsec;
	int64_t t = real + shift(real);
	int64_t sec = t / NS, nsec = t % NS;
	if (nsec < 0) {
		nsec += NS;
		sec--;
	}
	ts->tv_sec = sec;
	ts->tv_nsec = nsec;
	return 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)
		return wall(clk, ts);
	return __clock_gettime(clk, ts);
}

/* glibc declares tv nonnull, but the kernel's call accepts NULL and so
 * must this one. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	if (tz)
		((struct timezone *)tz)->tz_minuteswest = ((struct timezone *)tz)->tz_dsttime = 0;
	if (!tv)
		return 0;
	struct timespec ts;
	int r = wall(CLOCK_REALTIME, &ts);
	if (r != 0)
		return r;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *out)
{
	struct timespec ts;
	if (wall(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (out)
		*out = ts.tv_sec;
	return ts.tv_sec;
}
