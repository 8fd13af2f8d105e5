package report

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// KnownEntry is one row of the known-failure catalogue: one lock of one
// built-in known-<slug> scenario over its runs.
type KnownEntry struct {
	Scenario   string   `json:"scenario"`
	Failure    string   `json:"failure"`    // the scenario's first sentence
	References []string `json:"references"` // where it was reported
	Lock       string   `json:"lock"`
	// Runs and Reproduced: runs judged, and those whose expectations (the
	// failure as reported, or that a fixed bug stays fixed) were met;
	// Lo and Hi the Wilson 95% interval of Reproduced/Runs.
	Runs       int     `json:"runs"`
	Reproduced int     `json:"reproduced"`
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Expect     string  `json:"expect"`  // the expectation, as written
	Command    string  `json:"command"` // the command that re-runs it
}

// WriteKnown writes known.md and known.html, the catalogue of known
// failures, into dir.
func WriteKnown(dir string, entries []KnownEntry) error {
	var md, h strings.Builder
	md.WriteString("# Known failures\n\n")
	md.WriteString("Each row is a failure reported upstream (or found by locklab), a built-in `known-<slug>` scenario that reproduces it, and how often it did here: runs whose expectations were met, with the Wilson 95% interval. An expectation states the failure as reported, or, for a bug fixed in the version installed here, that it stays fixed.\n\n")
	md.WriteString("| failure | source | lock | expected | reproduced | command |\n|---|---|---|---|---|---|\n")
	h.WriteString("<!doctype html><meta charset=\"utf-8\"><title>Known failures</title>\n<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}table{border-collapse:collapse}code{font-size:90%}</style>\n")
	h.WriteString("<h1>Known failures</h1>\n<p>Each row is a failure reported upstream (or found by locklab), the built-in scenario that reproduces it, and how often it did here (runs whose expectations were met, Wilson 95% interval).</p>\n<table><tr><th>failure</th><th>source</th><th>lock</th><th>expected</th><th>reproduced</th><th>command</th></tr>\n")
	for _, e := range entries {
		rate := fmt.Sprintf("%d/%d [%.2f–%.2f]", e.Reproduced, e.Runs, e.Lo, e.Hi)
		refs := make([]string, len(e.References))
		hrefs := make([]string, len(e.References))
		for i, r := range e.References {
			refs[i], hrefs[i] = r, html.EscapeString(r)
			// A reference may be a URL followed by words ("URL (section)").
			if url, rest, _ := strings.Cut(r, " "); strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
				refs[i] = strings.TrimSpace("<" + url + "> " + rest)
				hrefs[i] = strings.TrimSpace(fmt.Sprintf("<a href=\"%s\">%s</a> %s", html.EscapeString(url), html.EscapeString(url), html.EscapeString(rest)))
			}
		}
		fmt.Fprintf(&md, "| **%s**: %s | %s | %s | `%s` | %s | `%s` |\n", e.Scenario, cell(e.Failure), cell(strings.Join(refs, "; ")),
			cell(e.Lock), cell(e.Expect), rate, e.Command)
		fmt.Fprintf(&h, "<tr><td><b>%s</b>: %s</td><td>%s</td><td>%s</td><td><code>%s</code></td><td>%s</td><td><code>%s</code></td></tr>\n",
			html.EscapeString(e.Scenario), html.EscapeString(e.Failure), strings.Join(hrefs, "<br>"), html.EscapeString(e.Lock),
			html.EscapeString(e.Expect), rate, html.EscapeString(e.Command))
	}
	h.WriteString("</table>\n")
	if err := os.WriteFile(filepath.Join(dir, "known.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("known.md: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "known.html"), []byte(h.String()), 0o644); err != nil {
		return fmt.Errorf("known.html: %w", err)
	}
	return nil
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }
