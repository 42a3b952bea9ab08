package batteries_test

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/customapi/customapi/pkg/batteries"
)

func TestOptionsFlags(t *testing.T) {
	cases := []struct {
		args    []string
		want    time.Duration
		wantErr bool
	}{
		{nil, batteries.DefaultEventTTL, false},
		{[]string{"--event-ttl=90s"}, 90 * time.Second, false},
		{[]string{"--event-ttl=0"}, 0, true},
		{[]string{"--event-ttl=-1m"}, -time.Minute, true},
	}
	for _, tc := range cases {
		var o batteries.Options
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.EventTTL != tc.want {
			t.Errorf("%v: EventTTL %s, want %s", tc.args, o.EventTTL, tc.want)
		}
		if err := errors.Join(o.Validate()...); (err != nil) != tc.wantErr {
			t.Errorf("%v: Validate() = %v, want an error: %t", tc.args, err, tc.wantErr)
		}
	}
}
