package printers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/printers"
	"github.com/customapi/customapi/pkg/resource"
)

func custom(name string, replicas int32, phase string, ports ...string) *testv1.Custom {
	c := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7"}}
	c.Spec.Replicas = replicas
	c.Status.Phase = phase
	for _, p := range ports {
		c.Spec.Ports = append(c.Spec.Ports, testv1.CustomPort{Name: p})
	}
	return c
}

func TestTableConvertor(t *testing.T) {
	withPorts := install.Customs
	withPorts.PrinterColumns = []resource.PrinterColumn{
		{Name: "Ports", Type: "string", JSONPath: ".spec.ports[*].name"},
		{Name: "Double", Type: "integer", Value: func(obj runtime.Object) any { return 2 * obj.(*testv1.Custom).Spec.Replicas }},
	}
	created := custom("aged", 1, "")
	created.CreationTimestamp = metav1.NewTime(time.Now().Add(-90 * time.Minute))
	cases := []struct {
		name    string
		res     resource.Resource
		obj     runtime.Object
		headers []string
		rows    [][]any
	}{
		{"declared columns; a missing field is nil", install.Customs, custom("c1", 3, ""),
			[]string{"Name", "Replicas", "Phase", "Message", "Age"}, [][]any{{"c1", int64(3), nil, nil, "<unknown>"}}},
		{"a list, a row per item", install.Customs, &testv1.CustomList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next"}, Items: []testv1.Custom{*custom("a", 1, "Ready"), *custom("b", 2, "Failed")}},
			[]string{"Name", "Replicas", "Phase", "Message", "Age"}, [][]any{{"a", int64(1), "Ready", nil, "<unknown>"}, {"b", int64(2), "Failed", nil, "<unknown>"}}},
		{"several results are joined; a Value function", withPorts, custom("p", 4, "", "http", "https"),
			[]string{"Name", "Ports", "Double", "Age"}, [][]any{{"p", "http https", int32(8), "<unknown>"}}},
		{"age", install.Customs, created,
			[]string{"Name", "Replicas", "Phase", "Message", "Age"}, [][]any{{"aged", int64(1), nil, nil, "90m"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv, err := printers.NewTableConvertor(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			table, err := conv.ConvertToTable(t.Context(), tc.obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			var headers []string
			for _, c := range table.ColumnDefinitions {
				headers = append(headers, c.Name)
			}
			if fmt.Sprint(headers) != fmt.Sprint(tc.headers) {
				t.Errorf("headers %v, want %v", headers, tc.headers)
			}
			var rows [][]any
			for _, r := range table.Rows {
				rows = append(rows, r.Cells)
			}
			if fmt.Sprintf("%#v", rows) != fmt.Sprintf("%#v", tc.rows) {
				t.Errorf("rows %#v, want %#v", rows, tc.rows)
			}
			if l, ok := tc.obj.(*testv1.CustomList); ok && (table.ResourceVersion != l.ResourceVersion || table.Continue != l.Continue) {
				t.Errorf("table resourceVersion %q continue %q, want the list's", table.ResourceVersion, table.Continue)
			}
		})
	}
}

func TestTableConvertorNoHeaders(t *testing.T) {
	conv, err := printers.NewTableConvertor(install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	table, err := conv.ConvertToTable(t.Context(), custom("c", 1, ""), &metav1.TableOptions{NoHeaders: true})
	if err != nil || len(table.ColumnDefinitions) != 0 || len(table.Rows) != 1 {
		t.Fatalf("table %+v, %v: want one row and no headers", table, err)
	}
}

func TestTableConvertorBadJSONPath(t *testing.T) {
	bad := install.Customs
	bad.PrinterColumns = []resource.PrinterColumn{{Name: "Broken", Type: "string", JSONPath: ".spec[.x"}}
	if _, err := printers.NewTableConvertor(bad); err == nil {
		t.Fatal("a JSONPath that does not parse was accepted")
	}
}

// Example renders one object as the rows `kubectl get` prints for it.
func ExampleNewTableConvertor() {
	conv, err := printers.NewTableConvertor(install.Customs)
	if err != nil {
		panic(err)
	}
	c := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	c.Spec.Replicas = 3
	c.Status.Phase = "Ready"
	table, err := conv.ConvertToTable(context.Background(), c, nil)
	if err != nil {
		panic(err)
	}
	for i, col := range table.ColumnDefinitions {
		fmt.Printf("%s=%v\n", col.Name, table.Rows[0].Cells[i])
	}
	// Output:
	// Name=web
	// Replicas=3
	// Phase=Ready
	// Message=<nil>
	// Age=<unknown>
}
