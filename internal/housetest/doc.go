// Package housetest holds the tests that keep the project's own rules:
// who may import whom (the layer table, mirrored in docs/architecture.md)
// and comments that explain the code rather than narrate its history. It
// has no code of its own.
package housetest
