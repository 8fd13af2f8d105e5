package report

import (
	"image/color"
	"os"
	"path/filepath"
	"strings"
)

// AtlasGrid is the safety atlas as a table of verdicts: one row per lock,
// one column per fault family (the atlas package fills it; report draws it
// without knowing the atlas's types).
type AtlasGrid struct {
	Rows, Cols []string
	Cells      [][]AtlasCell // [row][col]
}

// AtlasCell is one cell: its verdict ("safe", "unsafe",
// "unsafe-without-fencing", "inconclusive", "not-applicable") and the text
// shown in it (runs with incidents / runs).
type AtlasCell struct {
	Verdict string
	Label   string
}

var atlasColours = map[string]color.Color{
	"safe": colorOK, "unsafe": colorBad, "unsafe-without-fencing": colorWarn,
	"inconclusive": colorInconclusive, "not-applicable": colorNone,
}

// WriteAtlasPNG draws g into path (a .png; an .svg is written beside it).
func WriteAtlasPNG(path string, g AtlasGrid) error {
	t := colourTable{
		name:  strings.TrimSuffix(filepath.Base(path), ".png"),
		title: "Safety atlas: every lock against every fault family (runs with >= 1 incident / runs)",
		rows:  g.Rows, cols: g.Cols, splitHeads: true, minColW: 46,
		notes: []string{"green safe   red unsafe (the lock broke its promise)   yellow unsafe without fencing (client faults, lost updates)   blue inconclusive   grey not applicable"},
	}
	for _, row := range g.Cells {
		cells := make([]tableCell, len(row))
		for ci, cell := range row {
			fill, ok := atlasColours[cell.Verdict]
			if !ok {
				fill = colorNone
			}
			cells[ci] = tableCell{label: cell.Label, fill: fill}
		}
		t.cells = append(t.cells, cells)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return t.figure().save(filepath.Dir(path))
}
