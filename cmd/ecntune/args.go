package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// oneArg is cobra.ExactArgs(1) that says what the argument is: "models
// history: give the model NAME whose promotions to print (e.g. ...)"
// instead of "accepts 1 arg(s), received 0".
func oneArg(what, why string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		cmd := strings.TrimPrefix(c.CommandPath(), "ecntune ")
		switch {
		case len(args) == 0:
			return fmt.Errorf("%s: give the %s %s", cmd, what, why)
		case len(args) > 1:
			return fmt.Errorf("%s: give one %s, not %d arguments", cmd, what, len(args))
		}
		return nil
	}
}
