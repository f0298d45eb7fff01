/// Writes one JSON object member by member into bytes, for documents built by hand rather than by `JSONEncoder`
/// (the fleet page: thousands of agents, read every few seconds). Member names are written as given, so they must
/// be plain keys that need no escaping; string values go through the wire writer's escaping and repair, so any
/// text stays valid JSON. A nil value is written as `null`.
public struct JSONObjectWriter {
    private var bytes: [UInt8]
    private var isEmpty = true

    /// An object written after what `bytes` already holds.
    public init(appendingTo bytes: consuming [UInt8] = []) {
        self.bytes = bytes
        self.bytes.append(UInt8(ascii: "{"))
    }

    /// The bytes with the object closed.
    public consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// Reserves room for `count` more bytes.
    public mutating func reserveCapacity(_ count: Int) {
        bytes.reserveCapacity(bytes.count + count)
    }

    /// A string member.
    public mutating func member(_ name: StaticString, _ value: String?) {
        key(name)
        guard let value else { return null() }
        WireLineWriter.appendJSONString(value, to: &bytes)
    }

    /// An integer member.
    public mutating func member(_ name: StaticString, _ value: (some BinaryInteger)?) {
        key(name)
        guard let value else { return null() }
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A `true` or `false` member.
    public mutating func member(_ name: StaticString, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// An array of integers.
    public mutating func member(_ name: StaticString, integers: some Sequence<some BinaryInteger>) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in integers.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: String(value).utf8)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A nested object written by `body`, or `null` when `body` is nil.
    public mutating func member(_ name: StaticString, object body: ((inout JSONObjectWriter) -> Void)?) {
        key(name)
        guard let body else { return null() }
        bytes = Self.object(appendingTo: &bytes, body)
    }

    /// An array with one object per element of `elements`, each written by `body`.
    public mutating func member<Elements: Sequence>(
        _ name: StaticString, objects elements: Elements, _ body: (inout JSONObjectWriter, Elements.Element) -> Void
    ) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes = Self.object(appendingTo: &bytes) { body(&$0, element) }
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// `bytes` with an object written by `body` after them; `bytes` is left empty, so the array is not copied.
    private static func object(appendingTo bytes: inout [UInt8], _ body: (inout JSONObjectWriter) -> Void) -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &bytes)
        var nested = JSONObjectWriter(appendingTo: consume taken)
        body(&nested)
        return nested.finish()
    }

    private mutating func key(_ name: StaticString) {
        if !isEmpty { bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(contentsOf: "\":".utf8)
    }

    private mutating func null() {
        bytes.append(contentsOf: "null".utf8)
    }
}
