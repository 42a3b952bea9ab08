// Package customresources serves apiextensions.k8s.io/v1
// CustomResourceDefinitions and their custom resources in a customapi
// server: k8s.io/apiextensions-apiserver's server as the generic server
// every Go-typed group is installed on, its CRDs and custom resources
// stored with the registry's storage rules, the CRD groups added to the
// legacy /apis list, their schemas merged into /openapi/v2 and v3, and a
// CRD in a group of the Go types refused (422).
package customresources
