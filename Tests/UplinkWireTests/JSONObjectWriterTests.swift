import Foundation
import Testing
import UplinkWire

@Suite("JSON object writer")
struct JSONObjectWriterTests {
    @Test("members of every kind, nested objects, arrays and nulls make the JSON a decoder reads back")
    func members() throws {
        var json = JSONObjectWriter()
        json.member("name", "a \"quoted\"\nline\u{1}")
        json.member("count", UInt64.max)
        json.member("negative", Int64.min)
        json.member("missing", nil as String?)
        json.member("absent_number", nil as Int?)
        json.member("flag", true)
        json.member("series", integers: [1, 2, 3])
        json.member("empty", integers: [Int]())
        json.member("nested", object: { $0.member("inner", 7) })
        json.member("no_object", object: nil)
        json.member("list", objects: ["x", "y"]) { json, element in json.member("id", element) }
        let bytes = json.finish()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"name":"a \"quoted\"\nline\u0001","count":18446744073709551615,"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["name"] as? String == "a \"quoted\"\nline\u{1}")
        #expect(object["negative"] as? Int64 == Int64.min)
        #expect(object["missing"] is NSNull)
        #expect(object["absent_number"] is NSNull)
        #expect(object["flag"] as? Bool == true)
        #expect(object["series"] as? [Int] == [1, 2, 3])
        #expect(object["empty"] as? [Int] == [])
        #expect((object["nested"] as? [String: Int]) == ["inner": 7])
        #expect(object["no_object"] is NSNull)
        #expect((object["list"] as? [[String: String]]) == [["id": "x"], ["id": "y"]])
    }

    @Test("an empty object, and one written after bytes already there")
    func emptyAndAppended() {
        #expect(String(decoding: JSONObjectWriter().finish(), as: UTF8.self) == "{}")
        var json = JSONObjectWriter(appendingTo: Array("[".utf8))
        json.member("a", 1)
        #expect(String(decoding: json.finish(), as: UTF8.self) == #"[{"a":1}"#)
    }
}
