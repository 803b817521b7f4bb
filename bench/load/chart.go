package load

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{30, 30, 30, 255}
	grey  = color.RGBA{200, 200, 200, 255}
	red   = color.RGBA{200, 40, 40, 255}
	// One color per concurrency, in the order the rows give them.
	barColors = []color.RGBA{{90, 150, 220, 255}, {40, 90, 170, 255}, {15, 40, 100, 255}, {120, 120, 120, 255}}
)

// Chart draws the summary as a PNG: for every scenario, one bar per
// concurrency of acpnorm's frames/s over the echo baseline's (upper panel,
// with the 0.75 goal and 1.0 marked) and of acpnorm's p99 latency over the
// baseline's (lower panel, log scale, 1.0 marked).
func Chart(rows []Row, file string) error {
	var scenarios []string
	var streams []int
	cell := map[string]map[int]Row{}
	for _, r := range rows {
		if cell[r.Scenario] == nil {
			cell[r.Scenario] = map[int]Row{}
			scenarios = append(scenarios, r.Scenario)
		}
		cell[r.Scenario][r.Streams] = r
		found := false
		for _, s := range streams {
			found = found || s == r.Streams
		}
		if !found {
			streams = append(streams, r.Streams)
		}
	}
	const w, h, left, right, panelH, gap, top = 1100, 760, 70, 20, 280, 90, 50
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	text(img, left, 20, black, "acpnorm vs the echo baseline, same run, loopback (medians over rounds)")
	legendX := left
	for i, s := range streams {
		fill(img, image.Rect(legendX, 30, legendX+12, 42), barColors[i%len(barColors)])
		text(img, legendX+16, 40, black, fmt.Sprintf("c=%d", s))
		legendX += 70
	}

	groupW := float64(w-left-right) / float64(max(len(scenarios), 1))
	barW := int(groupW * 0.8 / float64(max(len(streams), 1)))
	panels := []struct {
		title string
		y0    int
		value func(Row) float64
		log   bool
		marks []float64
	}{
		{"throughput: acpnorm frames/s / echo frames/s (higher is better; goal 0.75 at c=8)", top + 20, func(r Row) float64 { return r.FPSRatio }, false, []float64{0.75, 1}},
		{"p99 latency: acpnorm / echo (lower is better; log scale)", top + 20 + panelH + gap, func(r Row) float64 { return r.P99Ratio }, true, []float64{1}},
	}
	for _, p := range panels {
		y0, y1 := p.y0, p.y0+panelH
		text(img, left, y0-6, black, p.title)
		vmax := 1.2
		for _, r := range rows {
			vmax = max(vmax, p.value(r)*1.1)
		}
		lo := 0.0
		if p.log {
			lo, vmax = math.Log10(0.5), math.Log10(vmax)
		}
		ypos := func(v float64) int {
			if p.log {
				v = math.Log10(max(v, 0.5))
			}
			return y1 - int((v-lo)/(vmax-lo)*float64(panelH))
		}
		// Axes and ticks.
		fill(img, image.Rect(left, y0, left+1, y1+1), black)
		fill(img, image.Rect(left, y1, w-right, y1+1), black)
		var ticks []float64
		if p.log {
			for _, t := range []float64{0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500} {
				if math.Log10(t) <= vmax {
					ticks = append(ticks, t)
				}
			}
		} else {
			step := 0.25
			if vmax > 3 {
				step = 1
			}
			for t := 0.0; t <= vmax; t += step {
				ticks = append(ticks, t)
			}
		}
		for _, t := range ticks {
			y := ypos(t)
			fill(img, image.Rect(left+1, y, w-right, y+1), grey)
			text(img, 8, y+4, black, fmt.Sprintf("%5.2f", t))
		}
		for _, m := range p.marks {
			y := ypos(m)
			fill(img, image.Rect(left+1, y-1, w-right, y+1), red)
		}
		for gi, sc := range scenarios {
			gx := left + int(float64(gi)*groupW+groupW*0.1)
			for si, st := range streams {
				r, ok := cell[sc][st]
				if !ok {
					continue
				}
				v := p.value(r)
				x := gx + si*barW
				y := ypos(v)
				fill(img, image.Rect(x+1, min(y, y1), x+barW-1, y1), barColors[si%len(barColors)])
				text(img, x, min(y, y1)-3, black, fmt.Sprintf("%.2f", v))
			}
			text(img, gx, y1+16, black, sc)
		}
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

func text(img *image.RGBA, x, y int, c color.Color, s string) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
