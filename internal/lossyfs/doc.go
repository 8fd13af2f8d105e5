// Package lossyfs is a pass-through FUSE filesystem that can lose what
// was never fsynced, as a power cut does: the harness puts a server's
// data directory on it, kills the server and calls Cut, and every file
// the server wrote reverts to its content and length at the file's last
// fsync (or fdatasync).
//
// The model, and its limits:
//   - File data is durable per file once that file is fsynced: writes,
//     truncations and fallocate punches made since its last fsync are
//     lost on Cut; closing a file persists nothing.
//   - Directory operations (create, mkdir, rename, unlink, link,
//     symlink, chmod) pass through at once and survive a cut, without a
//     directory fsync. A file created and never fsynced survives as an
//     empty file, as it can on ext4.
//   - A file that existed before it was first opened for writing
//     through the mount counts as fsynced as it was.
//   - Between cuts the filesystem passes everything through to the
//     backing directory, with Options.Writeback behind the kernel's FUSE
//     writeback cache: the kernel keeps written pages and sends them at
//     an fsync, a close or its own writeback, as it does for a disk
//     (without it, each write at once). An fsync is the backing
//     file's real fsync (fdatasync for an fdatasync), so its cost
//     stays. To undo a cut the filesystem keeps in memory the pre-image
//     of every fsynced page overwritten since the last fsync (appends
//     cost nothing) and restores it on Cut; what a reader sees is what
//     a reader of a buffering disk cache would see.
//   - Cut must run while nothing writes (the server killed). With the
//     writeback cache it first makes the kernel send the pages it still
//     holds (an open and a close of each file written, which is no
//     fsync). It restores and
//     truncates the backing files, then sets the kernel's idea of each
//     changed file's length (a truncate through the mount: with the
//     writeback cache the kernel trusts its own) and drops its cached
//     pages.
//   - Without the writeback cache, a file opened for reading only or
//     for appending only (O_APPEND) is served by kernel passthrough:
//     the kernel reads and appends to the backing file itself, without
//     a request, and the fsync still comes to the filesystem, which
//     then records the length (an append needs no saved content). Any
//     other writer goes through the filesystem (see node.openMode for
//     how the two share a file).
//   - Shared writable mmaps are not tracked (Redis, ZooKeeper and etcd
//     write with write/pwrite), nor are writes at an offset through a
//     file opened with O_APPEND (after fcntl clears the flag, or with
//     pwritev2's RWF_NOAPPEND): passthrough sends them to the backing
//     file unseen.
//   - The mount has no extended attributes: getxattr, setxattr,
//     listxattr and removexattr fail with EOPNOTSUPP. (Otherwise the
//     kernel asks for security.capability before a write whenever it
//     refreshed the file's attributes since the last one, which without
//     the writeback cache is at every write of a server that stats its
//     file between writes, as ZooKeeper does.)
//
// lossyfs imports nothing of locklab.
package lossyfs
