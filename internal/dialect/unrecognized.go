package dialect

// unreadFields is implemented by a dialect's update type (the U its read
// passes to readFrame) when it knows members under `rawOutput` or `_meta`
// that it deliberately does not read (a restatement of what it reads
// elsewhere, a field a build fills with a made-up value): each is a path
// such as "rawOutput.metadata.preview" or "_meta.claudeCode.toolResponse",
// and covers everything under it. Such members are never reported as
// unrecognized. Members typed in the update struct (by their json tags)
// need no declaration: they are known.
type unreadFields interface {
	unreadFields() []string
}
