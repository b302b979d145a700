package train

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WriteCurveCSV writes the learning curve, one row per round, with a
// header line.
func WriteCurveCSV(w io.Writer, curve []Round) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"round", "episodes", "transitions", "mean_reward", "epsilon", "loss", "updates", "eval_score", "entropy"})
	for _, r := range curve {
		ev := ""
		if r.Evaluated {
			ev = strconv.FormatFloat(r.EvalScore, 'g', 6, 64)
		}
		cw.Write([]string{strconv.Itoa(r.Round), strconv.Itoa(r.Episodes), strconv.FormatUint(r.Transitions, 10),
			strconv.FormatFloat(r.MeanReward, 'g', 6, 64), strconv.FormatFloat(r.Epsilon, 'g', 4, 64),
			strconv.FormatFloat(r.Loss, 'g', 6, 64), strconv.FormatUint(r.Updates, 10), ev,
			strconv.FormatFloat(r.Entropy, 'g', 4, 64)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteCurvePNG plots mean training reward (with exploration; per round
// and as a 20-round moving average) and the greedy evaluation score
// against episodes, as a PNG.
func WriteCurvePNG(w io.Writer, curve []Round, title string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "episodes"
	p.Y.Label.Text = "mean reward per queue-interval"
	var train, eval plotter.XYs
	for _, r := range curve {
		train = append(train, plotter.XY{X: float64(r.Episodes), Y: r.MeanReward})
		if r.Evaluated {
			eval = append(eval, plotter.XY{X: float64(r.Episodes), Y: r.EvalScore})
		}
	}
	if len(train) == 0 {
		return fmt.Errorf("learning curve is empty")
	}
	l, err := plotter.NewLine(train)
	if err != nil {
		return err
	}
	l.Color = color.Gray{Y: 190}
	p.Add(l)
	p.Legend.Add("training, per round", l)
	// Moving average over the last 20 rounds: each round holds only a
	// few randomised episodes, so single rounds are noisy.
	const window = 20
	avg := make(plotter.XYs, len(train))
	sum := 0.0
	for i, pt := range train {
		sum += pt.Y
		if i >= window {
			sum -= train[i-window].Y
		}
		avg[i] = plotter.XY{X: pt.X, Y: sum / float64(min(i+1, window))}
	}
	la, err := plotter.NewLine(avg)
	if err != nil {
		return err
	}
	la.Width = vg.Points(2)
	p.Add(la)
	p.Legend.Add("training, 20-round mean", la)
	if len(eval) > 0 {
		le, pe, err := plotter.NewLinePoints(eval)
		if err != nil {
			return err
		}
		le.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(le, pe)
		p.Legend.Add("greedy evaluation", le, pe)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	wt, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}
