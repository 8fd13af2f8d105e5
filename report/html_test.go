package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/testenv"
)

// imgProbe runs at the page's load event (which waits for every image) and
// writes how many images decoded into the DOM, where --dump-dom shows it.
const imgProbe = `<script>
window.addEventListener("load", function () {
  var imgs = document.images, ok = 0, bad = [];
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; else bad.push(imgs[i].alt);
  }
  var d = document.createElement("pre");
  d.id = "imgcheck";
  d.textContent = "imgcheck ok=" + ok + " total=" + imgs.length + " bad=" + bad.join("|");
  document.body.appendChild(d);
});
</script>
`

// brokenImg is a negative control: an image that cannot decode, so the
// test proves the probe tells a broken image from a good one.
const brokenImg = `<img alt="control-broken" src="data:image/png;base64,AAAA">`

var probeResult = regexp.MustCompile(`imgcheck ok=(\d+) total=(\d+) bad=([^<\n]*)`)

// TestReportHTMLInChromium renders report.html, loads it in headless
// Chromium and checks that every inlined image decoded (naturalWidth > 0).
func TestReportHTMLInChromium(t *testing.T) {
	testenv.RequireBinaries(t, "chromium")
	dir := outDir(t, "chromium")
	if err := Render(dir, syntheticResult(10, []int{4, 16})); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Count(page, []byte("<img "))
	if want < 5 {
		t.Fatalf("report.html has %d images, want the summary plots and timelines", want)
	}
	probe := bytes.Replace(page, []byte("</body>"), []byte(brokenImg+imgProbe+"</body>"), 1)
	probePath := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probePath, probe, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--disable-gpu", "--no-sandbox",
		"--no-first-run", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		// Bounded: the page is given 10 s of virtual time to settle.
		"--virtual-time-budget=10000", "--dump-dom", "file://"+probePath)
	// Chromium starts helper processes: kill the whole group on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.Bytes(), 2000))
	}
	m := probeResult.FindSubmatch(out)
	if m == nil {
		t.Fatalf("chromium's DOM has no probe result (the load event never fired?)\n%s", tail(stderr.Bytes(), 2000))
	}
	ok, _ := strconv.Atoi(string(m[1]))
	total, _ := strconv.Atoi(string(m[2]))
	if total != want+1 {
		t.Errorf("chromium saw %d images, want %d and the control", total, want)
	}
	if string(m[3]) != "control-broken" {
		t.Errorf("images that did not load: %q, want only the control", m[3])
	}
	if ok != want {
		t.Errorf("%d of %d report images loaded", ok, want)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
