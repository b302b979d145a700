package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/models"
)

func newModelsPromoteCmd(f *modelsFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "promote REF",
		Short: "Make a version the promoted one of its name (the previous one is retired)",
		Args:  oneArg("model REF", "to promote (NAME@N; models list shows them)"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(false, true, force, func(r *models.Registry) error {
				m, err := r.Promote(args[0], time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "promoted %s (id %d)%s\n", m.Ref(), m.ID, modelsBefore(r, m.Name))
				if line := intervalLine(m); line != "" {
					fmt.Fprintln(c.ErrOrStderr(), line)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "promote even a model whose observation/action spec this ecntune does not speak")
	return cmd
}
