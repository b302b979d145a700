package main

import (
	"strings"
	"testing"
)

// A models command given no argument says which one it wants, not
// "accepts 1 arg(s), received 0".
func TestModelsArgumentNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"history"}, "models history: give the model NAME whose promotions to print (e.g. mine; models list shows the names)"},
		{[]string{"show"}, "models show: give the model REF"},
		{[]string{"history", "a", "b"}, "models history: give one model NAME, not 2 arguments"},
	} {
		_, _, err := runModels(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "arg(s)") {
			t.Errorf("models %v: %v, want %q", c.args, err, c.want)
		}
	}
}
