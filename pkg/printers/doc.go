// Package printers renders a resource's objects as the Table that
// `kubectl get` prints, from the printer columns of its declaration
// (resource.Resource.PrinterColumns, the same shape as a
// CustomResourceDefinition's additionalPrinterColumns).
//
// The registry gives every store NewTableConvertor's result, so both the
// HTTP server (a request with Accept: application/json;as=Table;
// g=meta.k8s.io;v=v1, which kubectl sends) and any caller of the store's
// ConvertToTable get the same rows.
package printers
