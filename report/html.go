package report

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// htmlStyle is the report's whole stylesheet: inline, so report.html is
// one file that can be mailed or attached to a design review.
const htmlStyle = `
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1b1b1b;max-width:1200px;margin:24px auto;padding:0 16px}
h1{font-size:24px;margin:0 0 12px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:16px;margin:22px 0 6px}h4{font-size:14px;margin:14px 0 4px;color:#444}
table{border-collapse:collapse;margin:6px 0 10px;font-size:12.5px}
th,td{border:1px solid #d6d6d6;padding:3px 7px;vertical-align:top}
th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.bad td{background:#fde2e2}tr.inconclusive td{background:#e4e9f7}
.note{background:#fff4ce;border-left:4px solid #e0a800;padding:8px 12px;font-weight:600}
figure{margin:10px 0 18px}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:12px;color:#555}
.scroll{overflow-x:auto}
`

// html writes d as one self-contained HTML page: inline CSS, every image
// read from dir and inlined as a base64 data URI.
func (d *doc) html(w *bufio.Writer, dir string) error {
	esc := html.EscapeString
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<h1>%s</h1>\n",
		esc(d.title), htmlStyle, esc(d.title))
	for _, b := range d.blocks {
		switch b.kind {
		case bHeading:
			fmt.Fprintf(w, "<h%d>%s</h%d>\n", b.level, esc(b.text), b.level)
		case bPara:
			fmt.Fprintf(w, "<p>%s</p>\n", esc(b.text))
		case bNote:
			fmt.Fprintf(w, "<p class=\"note\">%s</p>\n", esc(b.text))
		case bList:
			w.WriteString("<ul>\n")
			for _, it := range b.items {
				fmt.Fprintf(w, "<li>%s</li>\n", esc(it))
			}
			w.WriteString("</ul>\n")
		case bImage:
			data, err := os.ReadFile(filepath.Join(dir, b.file))
			if err != nil {
				fmt.Fprintf(w, "<p class=\"note\">%s: image missing (%s)</p>\n", esc(b.text), esc(err.Error()))
				continue
			}
			fmt.Fprintf(w, "<figure><img alt=\"%s\" src=\"data:image/png;base64,", esc(b.text))
			enc := base64.NewEncoder(base64.StdEncoding, w)
			enc.Write(data)
			enc.Close()
			fmt.Fprintf(w, "\"><figcaption>%s (%s)</figcaption></figure>\n", esc(b.text), esc(b.file))
		case bTable:
			t := b.table
			w.WriteString("<div class=\"scroll\"><table>\n")
			if strings.Join(t.head, "") != "" {
				w.WriteString("<tr>")
				for _, h := range t.head {
					fmt.Fprintf(w, "<th>%s</th>", esc(h))
				}
				w.WriteString("</tr>\n")
			}
			for i, r := range t.rows {
				if t.cls[i] != "" {
					fmt.Fprintf(w, "<tr class=%q>", t.cls[i])
				} else {
					w.WriteString("<tr>")
				}
				for j, c := range r {
					if j < len(t.num) && t.num[j] {
						fmt.Fprintf(w, "<td class=\"n\">%s</td>", esc(c))
					} else {
						fmt.Fprintf(w, "<td>%s</td>", esc(c))
					}
				}
				w.WriteString("</tr>\n")
			}
			w.WriteString("</table></div>\n")
		}
	}
	w.WriteString("</body>\n</html>\n")
	return nil
}
