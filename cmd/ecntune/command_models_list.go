package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
)

func newModelsListCmd(f *modelsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list [NAME]",
		Short: "List model versions as a table",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return f.with(true, true, false, func(r *models.Registry) error {
				ms, err := r.List(name)
				if err != nil {
					return err
				}
				cps, err := r.Checkpoints()
				if err != nil {
					return err
				}
				space, err := r.Space()
				if err != nil {
					return err
				}
				w := c.OutOrStdout()
				if len(ms) == 0 {
					fmt.Fprintf(w, "no models in %s\n", r.Path())
				} else if err := modelsTable(w, ms); err != nil {
					return err
				}
				if err := checkpointsTable(w, r.Path(), cps, name, runLockHolder); err != nil {
					return err
				}
				fmt.Fprintln(w, "\n"+spaceLine(r.Path(), space))
				return nil
			})
		},
	}
}

// modelsTable prints one line per model version.
func modelsTable(w io.Writer, ms []models.Model) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODEL\tSTATUS\tALGO\tOBS\tACT\tWEIGHTS\tCREATED\tSHA256\tPARENT")
	for _, m := range ms {
		parent := m.Parent
		if parent == "" {
			parent = "-"
		}
		status := string(m.Status)
		if m.Damaged {
			status += ", DAMAGED (weights fail their sha256)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			m.ID, m.Ref(), status, m.Algorithm, m.ObsSpec, m.ActSpec, units.FormatBytes(m.WeightsSize),
			m.Created.UTC().Format(time.RFC3339), m.WeightsSHA256[:min(12, len(m.WeightsSHA256))], parent)
	}
	return tw.Flush()
}

// checkpointsTable lists the checkpoints of unfinished training runs
// (only run name's when name is set), each with its state (running: a
// trainer holds it now, as holder tells; stopped: interrupted or killed,
// the same train command resumes it; damaged), its episodes and its size;
// nothing when there are none.
func checkpointsTable(w io.Writer, db string, cps []models.Checkpoint, name string, holder func(db, run string) (string, bool)) error {
	var rows []models.Checkpoint
	for _, cp := range cps {
		if name == "" || cp.Run == name {
			rows = append(rows, cp)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nunfinished training runs (run the same train command to resume; models delete --checkpoint RUN to drop):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tEPISODES\tSIZE\tSHA256")
	for _, cp := range rows {
		state, eps := "stopped, resumable", strconv.Itoa(cp.Step)
		if owner, ok := holder(db, cp.Run); ok {
			state = "running (" + owner + ")"
		}
		if cp.Damaged {
			state, eps = "damaged", "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%x\n", cp.Run, state, eps, units.FormatBytes(int64(cp.Size)), cp.SHA256[:6])
	}
	return tw.Flush()
}

// spaceLine says what takes the space of the registry file: the models'
// weights and metadata, the checkpoints' training states, and the free
// pages bbolt keeps in the file (models compact gives them back).
func spaceLine(path string, s models.Space) string {
	out := fmt.Sprintf("%s: %s on disk: %d model version(s), %s of weights and %s of metadata",
		path, units.FormatBytes(s.File), s.Versions, units.FormatBytes(s.Weights), units.FormatBytes(s.Metadata))
	if s.Checkpoints > 0 {
		out += fmt.Sprintf("; %d checkpoint(s), %s of training state (a DDQN state holds its replay memory)", s.Checkpoints, units.FormatBytes(s.States))
	}
	out += fmt.Sprintf("; %s free", units.FormatBytes(s.Free))
	if s.Wasteful() {
		out += fmt.Sprintf(" (ecntune models compact --db %s gives it back)", path)
	}
	return out
}
