package chart

import (
	"hash/fnv"
	"image/color"
	"slices"
)

// seriesPalette are the colours of named series (policies, presets):
// distinct from each other and from the greys of fixed settings and the
// heatmaps' yellow-to-red.
var seriesPalette = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255},  // blue
	color.RGBA{R: 214, G: 39, B: 40, A: 255},   // red
	color.RGBA{R: 44, G: 160, B: 44, A: 255},   // green
	color.RGBA{R: 255, G: 127, B: 14, A: 255},  // orange
	color.RGBA{R: 148, G: 103, B: 189, A: 255}, // purple
	color.RGBA{R: 140, G: 86, B: 75, A: 255},   // brown
	color.RGBA{R: 227, G: 119, B: 194, A: 255}, // pink
	color.RGBA{R: 23, G: 190, B: 207, A: 255},  // cyan
	color.RGBA{R: 188, G: 189, B: 34, A: 255},  // olive
	color.RGBA{R: 0, G: 0, B: 128, A: 255},     // navy
	color.RGBA{R: 128, G: 0, B: 64, A: 255},    // wine
	color.RGBA{R: 0, G: 110, B: 90, A: 255},    // teal
	color.RGBA{R: 160, G: 120, B: 0, A: 255},   // ochre
	color.RGBA{R: 90, G: 40, B: 140, A: 255},   // indigo
	color.RGBA{R: 230, G: 80, B: 0, A: 255},    // vermilion
	color.RGBA{R: 60, G: 60, B: 60, A: 255},    // charcoal
}

// wellKnown are the names of the series every comparison has, each with a
// colour of its own that no other name is hashed to first.
var wellKnown = map[string]int{
	"builtin": 0, "static:best": 1, "static:hpcc": 2, "static:sonic-default": 3, "static:dcqcn-paper": 4,
	"static:nvidia": 5, "static:cisco": 6, "static:sonic-mellanox": 7, "static:huawei-latency": 8,
	"static:huawei-throughput": 9, "adaptive": 10,
}

// preferred is name's own slot of seriesPalette: its well-known one, else
// a hash of the name.
func preferred(name string) int {
	if i, ok := wellKnown[name]; ok {
		return i
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % uint32(len(seriesPalette)))
}

// SeriesColor is name's colour when drawn alone: the same in every
// picture, whatever else it is drawn with (unless two names of one
// picture want the same colour: see SeriesColors).
func SeriesColor(name string) color.Color { return seriesPalette[preferred(name)] }

// SeriesColors gives every name its colour for one picture: its own
// (SeriesColor) unless another name of the picture wants it too, then the
// next free one, the names taken in sorted order, so that the same names
// get the same colours in every picture (the order they are drawn in does
// not matter). Beyond the palette's size colours repeat.
func SeriesColors(names []string) map[string]color.Color {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make(map[string]color.Color, len(sorted))
	taken := make([]bool, len(seriesPalette))
	// Well-known names first: they keep their colours in every picture.
	slices.SortStableFunc(sorted, func(a, b string) int {
		_, ka := wellKnown[a]
		_, kb := wellKnown[b]
		switch {
		case ka && !kb:
			return -1
		case kb && !ka:
			return 1
		}
		return 0
	})
	for n, name := range sorted {
		i := preferred(name)
		if n < len(seriesPalette) {
			for taken[i] {
				i = (i + 1) % len(seriesPalette)
			}
		}
		taken[i] = true
		out[name] = seriesPalette[i]
	}
	return out
}
