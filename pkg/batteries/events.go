package batteries

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/resource"
)

// Length limits of event fields, kube-apiserver's.
const (
	maxReportingInstance = 128
	maxAction            = 128
	maxReason            = 128
	maxNote              = 1024
)

// CoreEvents declares events (core v1, kind Event, short name ev), the API
// of client-go's record.EventRecorder and of `kubectl events`, stored with
// the given TTL (resource.Resource.TTL; kube-apiserver's --event-ttl).
// Validation is kube's for the core API: involvedObject.namespace must
// match the event's namespace, and an event with eventTime set must name
// reportingComponent, reportingInstance, action and reason (within kube's
// length limits). Field selectors: involvedObject.{kind,namespace,name,uid,
// apiVersion,resourceVersion,fieldPath}, reason, reportingComponent, source
// and type, as kube-apiserver offers. kubectl get shows LAST SEEN, TYPE,
// REASON, OBJECT and MESSAGE.
func CoreEvents(ttl time.Duration) resource.Resource {
	get := func(f func(*corev1.Event) string) func(runtime.Object) string {
		return func(obj runtime.Object) string { return f(obj.(*corev1.Event)) }
	}
	return resource.Resource{
		GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Event"),
		Plural:           "events",
		ShortNames:       []string{"ev"},
		New:              func() runtime.Object { return &corev1.Event{} },
		NewList:          func() runtime.Object { return &corev1.EventList{} },
		Validate:         validateCoreEvent,
		TTL:              ttl,
		PrinterColumns: []resource.PrinterColumn{
			{Name: "Last Seen", Type: "string", Description: "Time since the event was last observed.", Value: func(obj runtime.Object) any {
				return since(lastSeen(obj.(*corev1.Event)))
			}},
			{Name: "Type", Type: "string", JSONPath: ".type", Description: "Normal or Warning."},
			{Name: "Reason", Type: "string", JSONPath: ".reason", Description: "Why the event happened."},
			{Name: "Object", Type: "string", Description: "The object the event is about.", Value: func(obj runtime.Object) any {
				o := obj.(*corev1.Event).InvolvedObject
				return fmt.Sprintf("%s/%s", lowerKind(o.Kind), o.Name)
			}},
			{Name: "Message", Type: "string", JSONPath: ".message", Description: "Human-readable description."},
		},
		SelectableFields: map[string]func(runtime.Object) string{
			"involvedObject.kind":            get(func(e *corev1.Event) string { return e.InvolvedObject.Kind }),
			"involvedObject.namespace":       get(func(e *corev1.Event) string { return e.InvolvedObject.Namespace }),
			"involvedObject.name":            get(func(e *corev1.Event) string { return e.InvolvedObject.Name }),
			"involvedObject.uid":             get(func(e *corev1.Event) string { return string(e.InvolvedObject.UID) }),
			"involvedObject.apiVersion":      get(func(e *corev1.Event) string { return e.InvolvedObject.APIVersion }),
			"involvedObject.resourceVersion": get(func(e *corev1.Event) string { return e.InvolvedObject.ResourceVersion }),
			"involvedObject.fieldPath":       get(func(e *corev1.Event) string { return e.InvolvedObject.FieldPath }),
			"reason":                         get(func(e *corev1.Event) string { return e.Reason }),
			"reportingComponent":             get(func(e *corev1.Event) string { return e.ReportingController }),
			"source":                         get(func(e *corev1.Event) string { return e.Source.Component }),
			"type":                           get(func(e *corev1.Event) string { return e.Type }),
		},
		OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
	}
}

// Events declares events (events.k8s.io/v1, kind Event), the API of
// client-go's events.EventRecorder (controller-runtime's GetEventRecorder),
// stored with the given TTL. Validation is kube's for this API: eventTime,
// reportingController, reportingInstance, action and reason are required,
// type is Normal or Warning, regarding.namespace matches the event's
// namespace (or the event is in default or kube-system), the deprecated
// core fields (deprecatedSource, deprecatedFirstTimestamp,
// deprecatedLastTimestamp, deprecatedCount) are unset on create, and a
// series has count >= 2 and lastObservedTime.
//
// As in kube-apiserver, both event APIs share one storage: these events
// are kept as core v1 Events under /registry/events/ (StoredAs CoreEvents,
// converted field by field: regarding is involvedObject, note is message,
// deprecatedSource is source, ...), so an event recorded through either
// API is listed, watched and deleted through both (`kubectl events`, which
// reads core v1, shows events of client-go's events.EventRecorder).
// Declare CoreEvents with the same TTL next to it.
func Events(ttl time.Duration) resource.Resource {
	return resource.Resource{
		StoredAs:         corev1.SchemeGroupVersion.WithResource("events"),
		AddConversions:   addEventConversions,
		GroupVersionKind: eventsv1.SchemeGroupVersion.WithKind("Event"),
		Plural:           "events",
		ShortNames:       []string{"ev"},
		New:              func() runtime.Object { return &eventsv1.Event{} },
		NewList:          func() runtime.Object { return &eventsv1.EventList{} },
		Validate:         validateEvent,
		TTL:              ttl,
		PrinterColumns: []resource.PrinterColumn{
			{Name: "Type", Type: "string", JSONPath: ".type", Description: "Normal or Warning."},
			{Name: "Reason", Type: "string", JSONPath: ".reason", Description: "Why the event happened."},
			{Name: "Object", Type: "string", Description: "The object the event is about.", Value: func(obj runtime.Object) any {
				o := obj.(*eventsv1.Event).Regarding
				return fmt.Sprintf("%s/%s", lowerKind(o.Kind), o.Name)
			}},
			{Name: "Note", Type: "string", JSONPath: ".note", Description: "Human-readable description."},
		},
		SelectableFields: map[string]func(runtime.Object) string{
			"regarding.kind":      func(obj runtime.Object) string { return obj.(*eventsv1.Event).Regarding.Kind },
			"regarding.namespace": func(obj runtime.Object) string { return obj.(*eventsv1.Event).Regarding.Namespace },
			"regarding.name":      func(obj runtime.Object) string { return obj.(*eventsv1.Event).Regarding.Name },
			"reason":              func(obj runtime.Object) string { return obj.(*eventsv1.Event).Reason },
			"reportingController": func(obj runtime.Object) string { return obj.(*eventsv1.Event).ReportingController },
			"type":                func(obj runtime.Object) string { return obj.(*eventsv1.Event).Type },
		},
		OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
	}
}

func validateCoreEvent(_ context.Context, obj runtime.Object) field.ErrorList {
	e := obj.(*corev1.Event)
	nsPath := field.NewPath("involvedObject", "namespace")
	var errs field.ErrorList
	if e.EventTime.IsZero() {
		// Old-style event: the namespaces agree (an event about a
		// cluster-scoped object lives in default, or nowhere).
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != "" && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		return errs
	}
	if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	return append(errs, validateReporting(field.NewPath("reportingComponent"), e.ReportingController, e.ReportingInstance, e.Action, e.Reason, e.Message, "message")...)
}

func validateEvent(_ context.Context, obj runtime.Object) field.ErrorList {
	e := obj.(*eventsv1.Event)
	var errs field.ErrorList
	if e.Regarding.Namespace == "" {
		if e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), e.Regarding.Namespace, "does not match event.namespace"))
		}
	} else if e.Regarding.Namespace != e.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), e.Regarding.Namespace, "does not match event.namespace"))
	}
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.NotSupported(field.NewPath("type"), e.Type, []string{corev1.EventTypeNormal, corev1.EventTypeWarning}))
	}
	errs = append(errs, validateReporting(field.NewPath("reportingController"), e.ReportingController, e.ReportingInstance, e.Action, e.Reason, e.Note, "note")...)
	if s := e.Series; s != nil {
		if s.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series", "count"), s.Count, "should be at least 2"))
		}
		if s.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
		}
	}
	for _, f := range []struct {
		name  string
		unset bool
	}{
		{"deprecatedSource", e.DeprecatedSource == corev1.EventSource{}},
		{"deprecatedFirstTimestamp", e.DeprecatedFirstTimestamp.IsZero()},
		{"deprecatedLastTimestamp", e.DeprecatedLastTimestamp.IsZero()},
		{"deprecatedCount", e.DeprecatedCount == 0},
	} {
		if !f.unset {
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", "needs to be unset"))
		}
	}
	return errs
}

// validateReporting checks the reporting fields both event APIs require
// of a new-style event.
func validateReporting(controllerPath *field.Path, controller, instance, action, reason, note, noteField string) field.ErrorList {
	var errs field.ErrorList
	if controller == "" {
		errs = append(errs, field.Required(controllerPath, ""))
	} else {
		for _, msg := range validation.IsQualifiedName(controller) {
			errs = append(errs, field.Invalid(controllerPath, controller, msg))
		}
	}
	for _, f := range []struct {
		path  string
		value string
		max   int
	}{
		{"reportingInstance", instance, maxReportingInstance},
		{"action", action, maxAction},
		{"reason", reason, maxReason},
	} {
		switch {
		case f.value == "":
			errs = append(errs, field.Required(field.NewPath(f.path), ""))
		case len(f.value) > f.max:
			errs = append(errs, field.TooLong(field.NewPath(f.path), "", f.max))
		}
	}
	if len(note) > maxNote {
		errs = append(errs, field.TooLong(field.NewPath(noteField), "", maxNote))
	}
	return errs
}

// lastSeen is when a core event was last observed: the series' last
// observation, lastTimestamp, eventTime, or creation, the first set.
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// since renders the time since t as kubectl shows ages, "<unknown>" for
// the zero time.
func since(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}

func lowerKind(kind string) string { return strings.ToLower(kind) }

// addEventConversions registers the conversions between events.k8s.io/v1
// and core v1 events (objects and lists), kube's field mapping: they lose
// nothing either way.
func addEventConversions(s *runtime.Scheme) error {
	return errors.Join(
		s.AddConversionFunc((*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b any, _ conversion.Scope) error {
			eventToCore(a.(*eventsv1.Event), b.(*corev1.Event))
			return nil
		}),
		s.AddConversionFunc((*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b any, _ conversion.Scope) error {
			coreToEvent(a.(*corev1.Event), b.(*eventsv1.Event))
			return nil
		}),
		s.AddConversionFunc((*eventsv1.EventList)(nil), (*corev1.EventList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*eventsv1.EventList), b.(*corev1.EventList)
			out.ListMeta = *in.ListMeta.DeepCopy()
			out.Items = make([]corev1.Event, len(in.Items))
			for i := range in.Items {
				eventToCore(&in.Items[i], &out.Items[i])
			}
			return nil
		}),
		s.AddConversionFunc((*corev1.EventList)(nil), (*eventsv1.EventList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*corev1.EventList), b.(*eventsv1.EventList)
			out.ListMeta = *in.ListMeta.DeepCopy()
			out.Items = make([]eventsv1.Event, len(in.Items))
			for i := range in.Items {
				coreToEvent(&in.Items[i], &out.Items[i])
			}
			return nil
		}),
	)
}

func eventToCore(in *eventsv1.Event, out *corev1.Event) {
	*out = corev1.Event{
		ObjectMeta:          *in.ObjectMeta.DeepCopy(),
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		Related:             in.Related.DeepCopy(),
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

func coreToEvent(in *corev1.Event, out *eventsv1.Event) {
	*out = eventsv1.Event{
		ObjectMeta:               *in.ObjectMeta.DeepCopy(),
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  in.Related.DeepCopy(),
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}
