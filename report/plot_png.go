package report

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"io"
)

// encodePNG writes img as an 8-bit RGB PNG, every row with the "up"
// filter. image/png tries all five filters on every row, which costs
// more than drawing a plot; plots are flat colours on white, where "up"
// compresses about as well. Transparent pixels are composited over white.
func encodePNG(w io.Writer, img *image.RGBA) error {
	b := img.Bounds()
	width, height := b.Dx(), b.Dy()
	var idat bytes.Buffer
	zw, err := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	if err != nil {
		return err
	}
	prev := make([]byte, 3*width)
	cur := make([]byte, 3*width)
	row := make([]byte, 1+3*width)
	row[0] = 2 // filter type "up"
	for y := 0; y < height; y++ {
		px := img.Pix[y*img.Stride : y*img.Stride+4*width] // Pix starts at b.Min
		for x := 0; x < width; x++ {
			s, d := px[4*x:4*x+4:4*x+4], cur[3*x:3*x+3:3*x+3]
			r, g, bl, a := s[0], s[1], s[2], s[3]
			if a != 0xff { // premultiplied: over white adds the missing alpha
				r, g, bl = r+(0xff-a), g+(0xff-a), bl+(0xff-a)
			}
			d[0], d[1], d[2] = r, g, bl
		}
		out := row[1:]
		for i := range out {
			out[i] = cur[i] - prev[i]
		}
		if _, err := zw.Write(row); err != nil {
			return err
		}
		prev, cur = cur, prev
	}
	if err := zw.Close(); err != nil {
		return err
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = 8, 2 // bit depth 8, colour type RGB
	if _, err := io.WriteString(w, "\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	for _, c := range []struct {
		typ  string
		data []byte
	}{{"IHDR", ihdr[:]}, {"IDAT", idat.Bytes()}, {"IEND", nil}} {
		if err := writeChunk(w, c.typ, c.data); err != nil {
			return err
		}
	}
	return nil
}

func writeChunk(w io.Writer, typ string, data []byte) error {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(data)))
	copy(hdr[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(hdr[4:])
	crc.Write(data)
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	for _, p := range [][]byte{hdr[:], data, sum[:]} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}
