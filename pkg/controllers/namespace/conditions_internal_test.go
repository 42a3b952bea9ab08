package namespace

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// TestSetNamespaceConditions: the five deletion conditions in kube's order
// and words, True with counts for what remains and for a discovery that
// failed in part, and a condition's
// lastTransitionTime kept while its status does not change.
func TestSetNamespaceConditions(t *testing.T) {
	long := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	for _, tc := range []struct {
		name      string
		before    []corev1.NamespaceCondition
		left      remainingContent
		discovery error
		errs      []error
		want      map[corev1.NamespaceConditionType]string // type -> "Status Reason: Message"
		keepsTime corev1.NamespaceConditionType
	}{{
		name: "all gone",
		left: remainingContent{},
		want: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered: All resources successfully discovered",
			corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions: All legacy kube types successfully parsed",
			corev1.NamespaceDeletionContentFailure:   "False ContentDeleted: All content successfully deleted, may be waiting on finalization",
			corev1.NamespaceContentRemaining:         "False ContentRemoved: All content successfully removed",
			corev1.NamespaceFinalizersRemaining:      "False ContentHasNoFinalizers: All content-preserving finalizers finished",
		},
	}, {
		name: "held and failing",
		left: remainingContent{
			byResource:  map[string]int{"customs.test": 2, "configmaps": 1},
			byFinalizer: map[string]int{"example.com/hold": 2},
		},
		discovery: &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "example.com", Version: "v1"}: errors.New("503")}},
		errs:      []error{errors.New("secrets: boom")},
		want: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionDiscoveryFailure: "True DiscoveryFailed: Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: example.com/v1: 503",
			corev1.NamespaceDeletionContentFailure:   "True ContentDeletionFailed: Failed to delete all resource types, 1 remaining: secrets: boom",
			corev1.NamespaceContentRemaining:         "True SomeResourcesRemain: Some resources are remaining: configmaps has 1 resource instances, customs.test has 2 resource instances",
			corev1.NamespaceFinalizersRemaining:      "True SomeFinalizersRemain: Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances",
		},
	}, {
		name:      "unchanged status keeps its time",
		before:    []corev1.NamespaceCondition{{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, LastTransitionTime: long}},
		left:      remainingContent{},
		want:      map[corev1.NamespaceConditionType]string{corev1.NamespaceContentRemaining: "False ContentRemoved: All content successfully removed"},
		keepsTime: corev1.NamespaceContentRemaining,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			status := corev1.NamespaceStatus{Conditions: tc.before}
			setNamespaceConditions(&status, tc.left, tc.discovery, tc.errs)
			if len(status.Conditions) != len(namespaceConditionTypes) {
				t.Fatalf("%d conditions, want %d", len(status.Conditions), len(namespaceConditionTypes))
			}
			for _, c := range status.Conditions {
				want, ok := tc.want[c.Type]
				if got := string(c.Status) + " " + c.Reason + ": " + c.Message; ok && got != want {
					t.Errorf("%s: %q, want %q", c.Type, got, want)
				}
				if c.Type == tc.keepsTime && !c.LastTransitionTime.Equal(&long) {
					t.Errorf("%s: lastTransitionTime %v, want %v kept", c.Type, c.LastTransitionTime, long)
				}
				if c.LastTransitionTime.IsZero() {
					t.Errorf("%s: no lastTransitionTime", c.Type)
				}
			}
		})
	}
}
