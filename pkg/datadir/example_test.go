package datadir_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/customapi/customapi/pkg/datadir"
)

// A tool that needs the data dir to itself takes its lock; while a server
// (or another tool) owns the data dir it is refused at once.
func ExampleLock() {
	dir, err := os.MkdirTemp("", "data")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	server, err := datadir.Own(dir) // what a starting server does
	if err != nil {
		panic(err)
	}
	_, err = datadir.Lock(dir)
	var inUse *datadir.InUseError
	fmt.Println("refused while owned:", errors.As(err, &inUse) && inUse.PID == os.Getpid())

	if err := server.Release(); err != nil {
		panic(err)
	}
	release, err := datadir.Lock(dir)
	fmt.Println("locked once released:", err == nil)
	_ = release()
	// Output:
	// refused while owned: true
	// locked once released: true
}
