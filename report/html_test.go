package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/locklab/locklab/testenv"
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

	out := testenv.Chromium(t, probePath, "--dump-dom")
	m := probeResult.FindSubmatch(out)
	if m == nil {
		t.Fatalf("chromium's DOM has no probe result (the load event never fired?)\n%s", tail(out, 2000))
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

// domText escapes text as --dump-dom writes it.
var domText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// TestReportScreenshot renders report.html in headless Chromium to a PNG
// of the window's size that is not blank, and finds in its DOM the
// Summary table that opens the report, with a reading per lock.
func TestReportScreenshot(t *testing.T) {
	dir := outDir(t, "report-screenshot")
	r := syntheticResult(3, []int{4})
	r.Runs[0].LockFaults, r.Runs[0].Incidents = 2, 2
	if err := Render(dir, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	testenv.ChromiumScreenshot(t, page, 1280, 1600)
	dom := string(testenv.Chromium(t, page, "--dump-dom"))
	summary := strings.Index(dom, "<h2>Summary</h2>")
	if summary < 0 || summary > strings.Index(dom, "<h2>Safety</h2>") {
		t.Fatalf("the rendered page does not open with the Summary")
	}
	if !strings.Contains(dom[summary:], "<th>reading</th>") {
		t.Error("the Summary table has no reading column")
	}
	for i := range r.Runs {
		if want := domText.Replace(Reading(&r.Runs[i])); !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks the reading of %s: %q", r.Runs[i].Lock, want)
		}
	}
}
