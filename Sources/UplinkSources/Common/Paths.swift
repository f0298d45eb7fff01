/// Joins a directory and a relative file name with exactly one `/` between them.
func joinPath(_ directory: String, _ name: String) -> String {
    if directory.isEmpty { return name }
    if directory.hasSuffix("/") { return directory + name }
    return directory + "/" + name
}
