// Package builtin lists the controllers a customapi server runs of its own,
// for what it serves: the namespace controller (package namespace), the
// ValidatingAdmissionPolicy status controller (package policystatus) and
// the garbage collector (package garbagecollector), with their names,
// which a program's own controllers may not take (Names). The server runs
// them, with the program's, on one controllers.Runner.
package builtin
