//go:build !race

package gale_test

// raceBuild says the tests were built with -race, so that TestAPI asks the
// go command for the same build of the public packages.
const raceBuild = false
