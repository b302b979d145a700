package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/models"
)

func newModelsHistoryCmd(f *modelsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "history NAME",
		Short: "Print the promotion history of a model name",
		Args:  oneArg("model NAME", "whose promotions to print (e.g. mine; models list shows the names)"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(true, true, false, func(r *models.Registry) error {
				h, err := r.History(args[0])
				if err != nil {
					return err
				}
				if len(h) == 0 {
					fmt.Fprintf(c.OutOrStdout(), "%s has never been promoted\n", args[0])
					return nil
				}
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tAT\tACTION\tPROMOTED\tBEFORE")
				for _, e := range h {
					before := "-"
					if e.Previous != 0 {
						before = fmt.Sprintf("%s@%d", args[0], e.Previous)
					}
					promoted := fmt.Sprintf("%s@%d", args[0], e.Version)
					if e.Version == 0 {
						promoted = "none"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", e.Seq, e.At.UTC().Format(time.RFC3339), e.Action, promoted, before)
				}
				return tw.Flush()
			})
		},
	}
}
