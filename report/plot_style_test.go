package report

import (
	"fmt"
	"image/color"
	"math"
	"testing"
)

// TestPaletteDistinct: 25 locks get 25 colours no two of which are closer
// than CIE76 ΔE 15 (tab10 alone repeated after ten).
func TestPaletteDistinct(t *testing.T) {
	if len(palette) < 25 {
		t.Fatalf("palette has %d colours, want at least 25", len(palette))
	}
	for i := 0; i < 25; i++ {
		for j := 0; j < i; j++ {
			if d := deltaE(palette[i], palette[j]); d < 15 {
				t.Errorf("colours %d and %d are ΔE %.1f apart, want >= 15", j, i, d)
			}
		}
	}
	seen := map[string]int{}
	for i := 0; i < 175; i++ {
		st := styleOf(i)
		k := fmt.Sprint(colorIndex(st.Color), st.Dash, glyphIndex(st.Glyph))
		if j, ok := seen[k]; ok {
			t.Errorf("series %d and %d have the same colour, dash and glyph", j, i)
		}
		seen[k] = i
	}
}

func colorIndex(c color.Color) int {
	for i, p := range palette {
		if p == c {
			return i
		}
	}
	return -1
}

func glyphIndex(g any) int {
	for i, x := range glyphs {
		if x == g {
			return i
		}
	}
	return -1
}

// deltaE is the CIE76 distance of two sRGB colours in L*a*b* (D65).
func deltaE(a, b color.Color) float64 {
	la, lb := lab(a), lab(b)
	return math.Sqrt((la[0]-lb[0])*(la[0]-lb[0]) + (la[1]-lb[1])*(la[1]-lb[1]) + (la[2]-lb[2])*(la[2]-lb[2]))
}

func lab(c color.Color) [3]float64 {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	lin := func(v uint8) float64 {
		x := float64(v) / 255
		if x > 0.04045 {
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		return x / 12.92
	}
	r, g, b := lin(n.R), lin(n.G), lin(n.B)
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(t float64) float64 {
		if t > 0.008856 {
			return math.Cbrt(t)
		}
		return 7.787*t + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}
