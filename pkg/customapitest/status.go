package customapitest

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RequireReason fails the test (tb.Fatalf) unless err is a Kubernetes
// Status error with reason want (metav1.StatusReasonNotFound, ...): one in
// which errors.As finds an apierrors.APIStatus, as client-go's clients,
// the dynamic client and customapi's in-process client return, the reason
// read as apierrors.ReasonForError reads it. It returns the error's Status,
// for RequireCause and further checks.
func RequireReason(tb testing.TB, err error, want metav1.StatusReason) metav1.Status {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want reason %s", want)
	}
	st := requireStatus(tb, err, "reason "+string(want))
	if st.Reason != want {
		tb.Fatalf("got reason %s (code %d: %v), want %s", st.Reason, st.Code, err, want)
	}
	return st
}

// RequireCode fails the test unless err is a Kubernetes Status error (as
// for RequireReason) with the HTTP status code (Status.Code: 403, 422,
// ...) whose message contains each of contains. It returns the Status.
func RequireCode(tb testing.TB, err error, code int32, contains ...string) metav1.Status {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want code %d with %q", code, contains)
	}
	st := requireStatus(tb, err, "code "+strconv.Itoa(int(code)))
	if st.Code != code {
		tb.Fatalf("got code %d (reason %s: %s), want %d", st.Code, st.Reason, st.Message, code)
	}
	for _, w := range contains {
		if !strings.Contains(st.Message, w) {
			tb.Fatalf("message %q does not contain %q", st.Message, w)
		}
	}
	return st
}

// RequireCause fails the test unless the Status has a cause (in
// Details.Causes) for the field: a path as field.ErrorList gives it, such
// as "spec.replicas" or "metadata.name".
func RequireCause(tb testing.TB, st metav1.Status, field string) {
	tb.Helper()
	if !hasCause(st, func(c metav1.StatusCause) bool { return c.Field == field }) {
		tb.Fatalf("no cause for field %s in the Status %q (details %+v)", field, st.Message, st.Details)
	}
}

// RequireCauseType fails the test unless the Status has a cause of the
// type (metav1.CauseTypeFieldValueInvalid, a storage layer's own cause
// type, ...).
func RequireCauseType(tb testing.TB, st metav1.Status, want metav1.CauseType) {
	tb.Helper()
	if !hasCause(st, func(c metav1.StatusCause) bool { return c.Type == want }) {
		tb.Fatalf("no cause of type %s in the Status %q (details %+v)", want, st.Message, st.Details)
	}
}

// hasCause reports whether a cause of the Status matches.
func hasCause(st metav1.Status, match func(metav1.StatusCause) bool) bool {
	return st.Details != nil && slices.ContainsFunc(st.Details.Causes, match)
}

// requireStatus returns the Status of err, failing the test unless err
// carries one; want says what the caller expected, for the message.
func requireStatus(tb testing.TB, err error, want string) metav1.Status {
	tb.Helper()
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		tb.Fatalf("got %T %v, want a Status error with %s", err, err, want)
	}
	return se.Status()
}
