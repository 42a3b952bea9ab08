package controllers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// recordingSink records what reaches it, at verbosity v.
type recordingSink struct {
	v     int
	lines *[]string
}

func (recordingSink) Init(logr.RuntimeInfo)    {}
func (s recordingSink) Enabled(level int) bool { return level <= s.v }
func (s recordingSink) Info(level int, msg string, kv ...any) {
	*s.lines = append(*s.lines, fmt.Sprintf("I%d %s %v", level, msg, kv))
}
func (s recordingSink) Error(err error, msg string, kv ...any) {
	*s.lines = append(*s.lines, fmt.Sprintf("E %s %v %v", msg, err, kv))
}
func (s recordingSink) WithValues(...any) logr.LogSink { return s }
func (s recordingSink) WithName(string) logr.LogSink   { return s }

// TestElectionLogger: the election's routine races (a Lease created or
// updated by another replica first) and its campaign line are V(2) info;
// every other error stays an error.
func TestElectionLogger(t *testing.T) {
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	conflict := apierrors.NewConflict(leases, "customapi-x", errors.New("the object has been modified"))
	exists := apierrors.NewAlreadyExists(leases, "customapi-x")
	other := apierrors.NewServiceUnavailable("etcd is down")
	for _, tc := range []struct {
		v    int
		want []string
	}{
		{0, []string{
			"E Error retrieving lease lock etcd is down []",
			"I0 Successfully acquired lease [lock kube-system/customapi-x]",
		}},
		{2, []string{
			"I2 Attempting to acquire leader lease... [lock kube-system/customapi-x]",
			"I2 Failed to update lease [lock kube-system/customapi-x err " + conflict.Error() + "]",
			"I2 Error initially creating lease lock [lock kube-system/customapi-x err " + exists.Error() + "]",
			"E Error retrieving lease lock etcd is down []",
			"I0 Successfully acquired lease [lock kube-system/customapi-x]",
		}},
	} {
		var lines []string
		logger := electionLogger(logr.New(recordingSink{v: tc.v, lines: &lines}))
		logger.Info("Attempting to acquire leader lease...", "lock", "kube-system/customapi-x")
		logger.Error(conflict, "Failed to update lease", "lock", "kube-system/customapi-x")
		logger.Error(exists, "Error initially creating lease lock", "lock", "kube-system/customapi-x")
		logger.Error(other, "Error retrieving lease lock")
		logger.Info("Successfully acquired lease", "lock", "kube-system/customapi-x")
		if fmt.Sprint(lines) != fmt.Sprint(tc.want) {
			t.Errorf("v=%d: logged\n%q\nwant\n%q", tc.v, lines, tc.want)
		}
	}
}
