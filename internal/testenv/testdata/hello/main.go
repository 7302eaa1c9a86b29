// Command hello is the program TestBuildArgs builds.
package main

func main() {}
