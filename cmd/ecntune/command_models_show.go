package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
)

func newModelsShowCmd(f *modelsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show REF",
		Short: "Print a model version's metadata as JSON and check its weights",
		Args:  oneArg("model REF", "to show (NAME, NAME@N or NAME@promoted; models list shows them)"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(true, true, false, func(r *models.Registry) error {
				m, err := r.Info(args[0])
				if err != nil {
					return err
				}
				b, err := json.MarshalIndent(m, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "%s\n", b)
				if line := twinLine(m); line != "" {
					fmt.Fprintln(c.ErrOrStderr(), line)
				}
				if line := intervalLine(m); line != "" {
					fmt.Fprintln(c.ErrOrStderr(), line)
				}
				if err := policy.CheckModelSpec(m); err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "note: %v\n", err)
				}
				// The metadata is shown even when the weights are damaged;
				// the exit status then says so.
				_, err = r.Resolve(strconv.FormatUint(m.ID, 10))
				return err
			})
		},
	}
}

// intervalLine says at which decision intervals the model m acts
// (policy.ModelValidInterval: it holds every queue at any other) and,
// when the agent can run it at none of its intervals (config.MinInterval
// to config.MaxInterval), how to make it deployable; "" for a model that
// acts at any.
func intervalLine(m models.Model) string {
	lo, hi, err := policy.ModelValidInterval(m)
	if err != nil {
		return "note: " + err.Error()
	}
	if hi == 0 {
		return ""
	}
	b := policy.IntervalBound{Policy: m.Ref(), Lo: lo, Hi: hi}
	how := "validated"
	if m.Hyper["validated_interval"] == "" {
		how = "a decade either side of the " + m.Hyper["interval"] + " it was trained at; not validated at others"
	}
	line := fmt.Sprintf("%s acts at decision intervals %s (%s) and holds every queue at any other", m.Ref(), b.Range(), how)
	if b.Excludes(min(max(hi, config.MinInterval), config.MaxInterval)) {
		line += fmt.Sprintf("; the agent (interval %v or more) refuses it: validate it at the agent's interval "+
			"(ecntune eval --interval 1s --policy model:%s), then train it again with --validated-interval MIN-MAX", config.MinInterval, m.Ref())
	}
	return line
}
