package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/models"
)

func newModelsRollbackCmd(f *modelsFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "rollback NAME",
		Short: "Promote again the version promoted before the current one",
		Args:  oneArg("model NAME", "whose promotion to roll back"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(false, true, force, func(r *models.Registry) error {
				m, err := r.Rollback(args[0], time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "rolled back: %s (id %d) is promoted again%s\n", m.Ref(), m.ID, modelsBefore(r, m.Name))
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "roll back even to a model whose observation/action spec this ecntune does not speak")
	return cmd
}
