import Foundation
import Testing
import UplinkTestSupport

/// `uplink config keygen | sign | verify`, run as an operator would: the real binary on real files.
@Suite("uplink config: keys and signatures on the command line")
struct ConfigSigningCommandLineTests {
    @Test("keygen, sign and verify: accepted for the audience, refused for another agent and after any change")
    func signAndVerify() async throws {
        let directory = try Harness.temporaryDirectory("cli-sign")
        let keys = directory + "/ops-2026"
        let keygen = try await UplinkBinary.run(["config", "keygen", "--out", keys])
        #expect(keygen.status == 0, "\(keygen.standardError)")
        let mode = try FileManager.default.attributesOfItem(atPath: keys + ".key")[.posixPermissions] as? Int
        #expect(mode == 0o600, "the secret key is readable by its owner only")
        #expect(try await UplinkBinary.run(["config", "keygen", "--out", keys]).status == 1, "keygen never overwrites a key")

        let document = directory + "/modbus.yaml"
        try "sources:\n  - {name: modbus, type: tail, paths: [/var/log/modbus.log]}\n".write(
            toFile: document, atomically: true, encoding: .utf8)
        let sign = try await UplinkBinary.run([
            "config", "sign", "--key", keys + ".key", "--serial", "42", "--audience", "agent=edge-*,labels.site=berlin-*",
            "--expires", "180d", document,
        ])
        #expect(sign.status == 0, "\(sign.standardError)")
        #expect(sign.standardOutput.contains("'modbus' serial 42"))
        let envelope = try String(contentsOfFile: document + ".sig", encoding: .utf8)
        #expect(envelope.contains("\"serial\":42") && envelope.contains("\"key_id\":\"ops-2026\""))

        func verify(_ extra: [String]) async throws -> (status: Int32, standardOutput: String, standardError: String) {
            try await UplinkBinary.run(["config", "verify", "--trusted-key", keys + ".pub"] + extra + [document])
        }
        let accepted = try await verify(["--agent-id", "edge-7", "--label", "site=berlin-3"])
        #expect(accepted.status == 0, "\(accepted.standardOutput) \(accepted.standardError)")
        let otherSite = try await verify(["--agent-id", "edge-7", "--label", "site=paris-1"])
        #expect(otherSite.status == 1 && otherSite.standardOutput.contains("does not include this agent"))

        // Another key with the same id does not verify: only the trusted key's signature counts.
        let impostor = directory + "/impostor/ops-2026"
        try FileManager.default.createDirectory(atPath: directory + "/impostor", withIntermediateDirectories: true)
        #expect(try await UplinkBinary.run(["config", "keygen", "--out", impostor]).status == 0)
        let wrongKey = try await UplinkBinary.run([
            "config", "verify", "--trusted-key", impostor + ".pub", "--agent-id", "edge-7", "--label", "site=berlin-3", document,
        ])
        #expect(wrongKey.status == 1 && wrongKey.standardOutput.contains("does not verify"))

        // One byte more in the document: refused.
        let handle = try #require(FileHandle(forWritingAtPath: document))
        handle.seekToEndOfFile()
        handle.write(Data("#".utf8))
        try handle.close()
        let tampered = try await verify(["--agent-id", "edge-7", "--label", "site=berlin-3"])
        #expect(tampered.status == 1 && tampered.standardOutput.contains("not the signed one"))
    }

    @Test("sign refuses what it cannot sign with a clear message")
    func signRefusals() async throws {
        let directory = try Harness.temporaryDirectory("cli-sign-bad")
        #expect(try await UplinkBinary.run(["config", "keygen", "--out", directory + "/k"]).status == 0)
        let document = directory + "/doc.yaml"
        try "sources: []\n".write(toFile: document, atomically: true, encoding: .utf8)
        let base = ["config", "sign", "--key", directory + "/k.key", "--serial", "1"]
        let badAudience = try await UplinkBinary.run(base + ["--audience", "site=x", "--expires", "1d", document])
        #expect(badAudience.status != 0 && badAudience.standardError.contains("site=x"))
        let past = try await UplinkBinary.run(base + ["--audience", "*", "--expires", "2020-01-01T00:00:00Z", document])
        #expect(past.status != 0 && past.standardError.contains("in the past"))
        let publicAsSecret = try await UplinkBinary.run(
            ["config", "sign", "--key", directory + "/k.pub", "--serial", "1", "--audience", "*", "--expires", "1d", document])
        #expect(publicAsSecret.status == 1 && publicAsSecret.standardError.contains("public key file"))
    }
}
