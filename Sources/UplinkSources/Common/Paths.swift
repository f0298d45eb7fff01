/// Joins a directory and a relative file name with exactly one `/` between them.
func joinPath(_ directory: String, _ name: String) -> String {
    if directory.isEmpty { return name }
    if directory.hasSuffix("/") { return directory + name }
    return directory + "/" + name
}

/// The file a source keeps its state in: `<stateDirectory>/<kind directory>/<source name><suffix>`, the name with
/// characters other than letters, digits, `.`, `_` and `-` replaced by `_` (and never `.`, `..` or empty), so that
/// any source name gives one plain file inside the kind's directory.
func sourceStateFile(stateDirectory: String, kindDirectory: String, sourceName: String, suffix: String) -> String {
    let safe = String(
        sourceName.unicodeScalars.map { scalar -> Character in
            let ok = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z")
                || (scalar >= "0" && scalar <= "9") || scalar == "." || scalar == "_" || scalar == "-"
            return ok ? Character(scalar) : "_"
        })
    let name = safe.isEmpty || safe == "." || safe == ".." ? "_" : safe
    return joinPath(joinPath(stateDirectory, kindDirectory), name + suffix)
}
