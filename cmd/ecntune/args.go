package main

import (
	"fmt"
	"os"
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

// notAnInput refuses an output file that is one of the command's input
// files, by any path to it (a link, ./x and x): the run would replace what
// it read (sim --fct-out on its scenario wrote flows over it). Outputs and
// inputs that do not exist yet, and empty names, pass.
func notAnInput(flag, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	ost, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(ost, ist) {
			return fmt.Errorf("--%s %s is an input of this run (%s): give another file, or it would be overwritten", flag, out, in)
		}
	}
	return nil
}
