package garbagecollector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestDiffOwners(t *testing.T) {
	ref := func(uid string, block bool) metav1.OwnerReference {
		return metav1.OwnerReference{UID: types.UID(uid), BlockOwnerDeletion: ptr.To(block)}
	}
	uids := func(refs []metav1.OwnerReference) []string {
		out := []string{}
		for _, r := range refs {
			out = append(out, string(r.UID))
		}
		return out
	}
	for _, tc := range []struct {
		name                    string
		before, after           []metav1.OwnerReference
		added, removed, changed []string
	}{
		{"none", nil, nil, []string{}, []string{}, []string{}},
		{"added", nil, []metav1.OwnerReference{ref("a", false)}, []string{"a"}, []string{}, []string{}},
		{"removed", []metav1.OwnerReference{ref("a", true)}, nil, []string{}, []string{"a"}, []string{}},
		{"blockOwnerDeletion changed", []metav1.OwnerReference{ref("a", true)}, []metav1.OwnerReference{ref("a", false)}, []string{}, []string{}, []string{"a"}},
		{"one of each", []metav1.OwnerReference{ref("a", false), ref("b", false)}, []metav1.OwnerReference{ref("b", true), ref("c", false)}, []string{"c"}, []string{"a"}, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, removed, changed := diffOwners(tc.before, tc.after)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"added", uids(added), tc.added}, {"removed", uids(removed), tc.removed}, {"changed", uids(changed), tc.changed}} {
				if len(c.got) != len(c.want) {
					t.Fatalf("%s = %v, want %v", c.what, c.got, c.want)
				}
				for i := range c.got {
					if c.got[i] != c.want[i] {
						t.Fatalf("%s = %v, want %v", c.what, c.got, c.want)
					}
				}
			}
		})
	}
}
