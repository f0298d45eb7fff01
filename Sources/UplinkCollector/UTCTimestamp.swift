/// Formats nanoseconds since the Unix epoch as RFC 3339 UTC with nine fraction digits, e.g.
/// `2025-11-21T05:40:18.123456789Z`, without Foundation.
enum UTCTimestamp {
    /// The proleptic Gregorian date of a day number (days since 1970-01-01), after Howard Hinnant's
    /// `civil_from_days` (http://howardhinnant.github.io/date_algorithms.html).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097  // [0, 146096]
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365  // [0, 399]
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // [0, 365], from March 1
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // [0, 11], March = 0
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Appends the timestamp for `nanoseconds` since the epoch (any `Int64`: years 1677 to 2262).
    static func append(nanoseconds: Int64, to output: inout [UInt8]) {
        // Floor division so that instants before 1970 get a positive fraction.
        var seconds = nanoseconds / 1_000_000_000
        var fraction = nanoseconds % 1_000_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000_000
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            days -= 1
            secondOfDay += 86_400
        }
        let (year, month, day) = civil(fromDays: days)
        appendDigits(year, count: 4, to: &output)
        output.append(UInt8(ascii: "-"))
        appendDigits(month, count: 2, to: &output)
        output.append(UInt8(ascii: "-"))
        appendDigits(day, count: 2, to: &output)
        output.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3600, count: 2, to: &output)
        output.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay / 60 % 60, count: 2, to: &output)
        output.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, count: 2, to: &output)
        output.append(UInt8(ascii: "."))
        appendDigits(fraction, count: 9, to: &output)
        output.append(UInt8(ascii: "Z"))
    }

    /// The timestamp as a `String`.
    static func string(nanoseconds: Int64) -> String {
        var bytes: [UInt8] = []
        append(nanoseconds: nanoseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends a non-negative `value` in decimal, zero-padded to at least `count` digits.
    private static func appendDigits(_ value: Int64, count: Int, to output: inout [UInt8]) {
        var digits: [UInt8] = []
        var value = value
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(value % 10))
            value /= 10
        } while value > 0
        if digits.count < count { output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count - digits.count)) }
        output.append(contentsOf: digits.reversed())
    }
}
