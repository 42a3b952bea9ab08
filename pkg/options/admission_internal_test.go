package options

import (
	"fmt"
	"testing"
)

// TestWithSelf: the service default/kubernetes goes to the loopback
// address unless the user maps it; the user's map is not changed.
func TestWithSelf(t *testing.T) {
	user := map[string]string{"webhooks/deny": "127.0.0.1:9443"}
	for _, tc := range []struct {
		mapping  map[string]string
		loopback string
		want     string
	}{
		{nil, "https://127.0.0.1:6443", "map[default/kubernetes:127.0.0.1:6443]"},
		{user, "https://[::1]:6443", "map[default/kubernetes:[::1]:6443 webhooks/deny:127.0.0.1:9443]"},
		{map[string]string{"default/kubernetes": "10.0.0.1:443"}, "https://127.0.0.1:6443", "map[default/kubernetes:10.0.0.1:443]"},
		{user, "", "map[webhooks/deny:127.0.0.1:9443]"},
	} {
		if got := fmt.Sprint(withSelf(tc.mapping, tc.loopback)); got != tc.want {
			t.Errorf("withSelf(%v, %q) = %s, want %s", tc.mapping, tc.loopback, got, tc.want)
		}
	}
	if len(user) != 1 {
		t.Errorf("the user's map was changed: %v", user)
	}
}
