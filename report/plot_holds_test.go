package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHoldsAggregate: up to holdsAggregateAbove visits the holds plot
// draws one bar per visit; beyond, completions per client and bucket.
func TestHoldsAggregate(t *testing.T) {
	tests := []struct {
		name      string
		visits    int
		aggregate bool
	}{
		{"bars", holdsAggregateAbove, false},
		{"aggregated", 3 * holdsAggregateAbove, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := outDir(t, "holds-"+tt.name)
			r := syntheticResult(1, []int{4})
			var h strings.Builder
			// Clients take turns: visit i by client i%4, 20 ms each.
			for i := 0; i < tt.visits; i++ {
				at := int64(i) * 20e6
				fmt.Fprintf(&h, `{"run":0,"client":%d,"op":"acquire","visit":%d,"return_ns":%d,"valid_until_ns":%d}`+"\n", i%4, i+1, at, at+2e9)
				fmt.Fprintf(&h, `{"run":0,"client":%d,"op":"enter","visit":%d,"return_ns":%d}`+"\n", i%4, i+1, at)
				fmt.Fprintf(&h, `{"run":0,"client":%d,"op":"exit","visit":%d,"return_ns":%d}`+"\n", i%4, i+1, at+15e6)
			}
			if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(h.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := WritePlots(dir, r); err != nil {
				t.Fatal(err)
			}
			name := strings.Replace(timelineNames(r.Runs)[0], "timeline-", "holds-", 1)
			checkPNG(t, filepath.Join(dir, name+".png"))
			svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(svg), "too many for one bar each"); got != tt.aggregate {
				t.Errorf("%d visits: aggregated %v, want %v", tt.visits, got, tt.aggregate)
			}
		})
	}
}
