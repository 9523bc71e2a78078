// hello is gobin's test program: it prints its greeting, set with -ldflags
// "-X main.greeting=...", then sleeps for as long as its argument says.
package main

import (
	"fmt"
	"os"
	"time"
)

var greeting = "hello"

func main() {
	fmt.Println(greeting)
	if len(os.Args) > 1 {
		d, _ := time.ParseDuration(os.Args[1])
		time.Sleep(d)
	}
}
