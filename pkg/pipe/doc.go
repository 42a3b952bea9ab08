// Package pipe serves an HTTP handler over in-memory connections: the
// in-memory pipe through which a customapi server's own clients (its
// controllers, its admission plugins' and apiextensions' informers, a
// program's client-go or controller-runtime clients of
// server.Server.PipeConfig) reach its whole handler chain without a
// socket, TLS or the network. Not to be confused with the in-process
// door (package client over package registry), which skips HTTP
// altogether.
package pipe
