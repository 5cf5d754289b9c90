// Command empty is the floor of BenchmarkVersionStartup: a static Go binary
// that does nothing.
package main

func main() {}
