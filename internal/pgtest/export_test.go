package pgtest

// OwnDir is ownDir, for the package's external tests.
var OwnDir = ownDir
