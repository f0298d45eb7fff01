import Foundation
import Testing
import UplinkCore
import UplinkFiles
import UplinkTestSupport

@testable import UplinkRemoteConfig

@Suite("SHA-256 and Ed25519")
struct CryptographyTests {
    @Test("SHA-256 matches the FIPS 180-2 vectors, whole and in parts")
    func sha256Vectors() {
        #expect(SHA256Digest(of: Array("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Digest(of: [UInt8]()).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        var hasher = SHA256Hasher()
        for part in stride(from: 0, to: message.count, by: 7) { hasher.update(message[part..<min(part + 7, message.count)]) }
        #expect(hasher.finalize().hex == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("a digest's textual forms parse back, and nothing else parses")
    func digestText() {
        let digest = SHA256Digest(of: Array("x".utf8))
        #expect(SHA256Digest(hex: digest.hex) == digest)
        #expect(SHA256Digest(prefixed: digest.prefixed) == digest)
        #expect(SHA256Digest(hex: digest.hex.uppercased()) == nil, "lower case only: one spelling per digest")
        #expect(SHA256Digest(hex: String(digest.hex.dropLast())) == nil)
        #expect(SHA256Digest(prefixed: digest.hex) == nil)
    }

    @Test("Ed25519 matches RFC 8032 test 2, and a changed message or signature does not verify")
    func ed25519Vector() throws {
        let seed = try #require(Hex.decode("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"))
        let key = try #require(Ed25519.SecretKey(seed: seed))
        #expect(Hex.encode(key.publicKey.bytes) == "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
        let signature = key.signature(for: [0x72])
        #expect(Hex.encode(signature) == "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
            + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")
        #expect(key.publicKey.isValidSignature(signature, for: [0x72]))
        #expect(!key.publicKey.isValidSignature(signature, for: [0x73]))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!key.publicKey.isValidSignature(flipped, for: [0x72]))
        #expect(!key.publicKey.isValidSignature(Array(signature.dropLast()), for: [0x72]))
        #expect(!Ed25519.SecretKey.generate().publicKey.isValidSignature(signature, for: [0x72]))
    }
}

@Suite("Key files")
struct SigningKeyFileTests {
    @Test("a generated pair written and read back signs and verifies")
    func roundTrip() throws {
        let directory = try TestDirectories.make("uplink-keys")
        let signing = SigningKeyFile.SigningKey(id: "ops-2026", key: .generate())
        let trusted = SigningKeyFile.TrustedKey(id: "ops-2026", key: signing.key.publicKey)
        try AtomicFile.write(Array(SigningKeyFile.secretText(signing).utf8), to: directory + "/k.key", mode: 0o600)
        try AtomicFile.write(Array(SigningKeyFile.publicText(trusted).utf8), to: directory + "/k.pub")
        let readSecret = try SigningKeyFile.readSecret(path: directory + "/k.key").get()
        let readPublic = try SigningKeyFile.readPublic(path: directory + "/k.pub").get()
        #expect(readPublic == trusted)
        #expect(readSecret.key.publicKey == trusted.key)
        #expect(readPublic.key.isValidSignature(readSecret.key.signature(for: [1, 2, 3]), for: [1, 2, 3]))
    }

    @Test("malformed key files are refused with the path and the reason")
    func refusals() {
        func reason(_ text: String, kind: String = "public") -> String? {
            if case .failure(let failure) = SigningKeyFile.parse(text: text, path: "/etc/k", kind: kind) {
                return failure.description
            }
            return nil
        }
        let key = Base64.encode([UInt8](repeating: 7, count: 32))
        #expect(reason("uplink-ed25519-public ops \(key)\n") == nil)
        #expect(reason("# comment\n\nuplink-ed25519-public ops \(key)\n") == nil)
        #expect(reason("uplink-ed25519-secret ops \(key)\n")?.contains("this is a secret key file") == true)
        #expect(reason("uplink-ed25519-public ops \(key)\nuplink-ed25519-public two \(key)\n")?.contains("found 2 lines") == true)
        #expect(reason("uplink-ed25519-public o/ps \(key)\n")?.contains("key id") == true)
        #expect(reason("uplink-ed25519-public ops !!!!\n")?.contains("base64") == true)
        #expect(reason("ssh-ed25519 AAAA user@host\n")?.hasPrefix("/etc/k: not an uplink public key file") == true)
        #expect(SigningKeyFile.readPublic(path: "/nonexistent/k.pub").failure?.description.contains("cannot read") == true)
    }
}

@Suite("Envelopes")
struct ConfigEnvelopeTests {
    let key = SigningKeyFile.SigningKey(id: "ops-2026", key: .generate())
    let document = Array("sources:\n  - {name: app, type: tail, paths: [/var/log/app/*.log]}\n".utf8)
    var verifier: EnvelopeVerifier {
        EnvelopeVerifier(trustedKeys: [SigningKeyFile.TrustedKey(id: key.id, key: key.key.publicKey)])
    }

    func signed(serial: UInt64 = 42, audience: Audience = .everyone, notAfter: Int64 = 1_900_000_000) -> ConfigEnvelope {
        ConfigEnvelope.sign(document: document, name: "app", serial: serial, audience: audience, notAfter: notAfter, with: key)
    }

    @Test("an envelope survives its JSON form and verifies; the JSON names every field")
    func roundTrip() throws {
        let envelope = signed(audience: Audience(agent: "edge-*", labels: ["site": "berlin-*"]))
        let text = String(decoding: envelope.json, as: UTF8.self)
        #expect(text.contains("\"not_after\":\"2030-03-17T17:46:40Z\""))
        #expect(text.contains("\"key_id\":\"ops-2026\""))
        let parsed = try ConfigEnvelope(json: envelope.json)
        #expect(parsed == envelope)
        #expect(verifier.verifySignature(of: parsed, document: document, named: "app").isSuccess)
    }

    @Test("any one changed byte of the document or of any signed field breaks the signature")
    func everyFieldIsSigned() {
        let envelope = signed(audience: Audience(agent: "edge-*", labels: ["site": "b"]))
        var changedDocument = document
        changedDocument[5] ^= 0x20
        #expect(verifier.verifySignature(of: envelope, document: changedDocument, named: "app").failure
            == .contentMismatch(expected: envelope.sha256, actual: SHA256Digest(of: changedDocument),
                expectedSize: document.count, actualSize: document.count))
        var variants: [ConfigEnvelope] = []
        var copy = envelope
        copy.serial += 1; variants.append(copy)
        copy = envelope; copy.audience.agent = "*"; variants.append(copy)
        copy = envelope; copy.audience.labels["site"] = "c"; variants.append(copy)
        copy = envelope; copy.audience.labels["ring"] = "canary"; variants.append(copy)
        copy = envelope; copy.notAfter += 1; variants.append(copy)
        for variant in variants {
            #expect(verifier.verifySignature(of: variant, document: document, named: "app").failure == .badSignature(keyID: "ops-2026"))
        }
        copy = envelope; copy.keyID = "other"
        #expect(verifier.verifySignature(of: copy, document: document, named: "app").failure == .untrustedKey(id: "other"))
        #expect(verifier.verifySignature(of: envelope, document: document, named: "base").failure
            == .nameMismatch(envelope: "app", document: "base"))
        // The signed bytes of two envelopes differ whenever a field differs, even when their concatenations agree.
        let a = ConfigEnvelope(keyID: "k", name: "ab", sha256: envelope.sha256, size: 1, serial: 1, audience: .everyone, notAfter: 0)
        let b = ConfigEnvelope(keyID: "ka", name: "b", sha256: envelope.sha256, size: 1, serial: 1, audience: .everyone, notAfter: 0)
        #expect(a.signedBytes != b.signedBytes)
    }

    @Test("audience, serial and expiry: the agent's checks")
    func agentChecks() {
        let envelope = signed(serial: 42, audience: Audience(agent: "edge-*", labels: ["site": "berlin-*"]), notAfter: 2_000)
        func verify(_ id: String = "edge-1", _ labels: [String: String] = ["site": "berlin-3"], seen: EnvelopeVerifier.SeenSerial? = nil,
                    now: Int64 = 1_000, new: Bool = true) -> EnvelopeVerifier.Refusal? {
            verifier.verify(envelope, document: document, named: "app", agentID: id, labels: labels, seen: seen, now: now, isNewApply: new).failure
        }
        #expect(verify() == nil)
        #expect(verify("gw-1") == .notInAudience(audience: "agent=edge-*,labels.site=berlin-*"))
        #expect(verify("edge-1", ["site": "paris-1"]) != nil)
        #expect(verify("edge-1", [:]) != nil, "an agent without the label is not in the audience")
        #expect(verify(seen: .init(serial: 41, sha256: SHA256Digest(of: [1]))) == nil)
        #expect(verify(seen: .init(serial: 42, sha256: envelope.sha256)) == nil, "the same signed document again")
        #expect(verify(seen: .init(serial: 42, sha256: SHA256Digest(of: [1]))) == .staleSerial(serial: 42, highestSeen: 42))
        #expect(verify(seen: .init(serial: 43, sha256: SHA256Digest(of: [1]))) == .staleSerial(serial: 42, highestSeen: 43))
        #expect(verify(now: 2_001) == .expired(notAfter: 2_000))
        #expect(verify(now: 2_001, new: false) == nil, "a running document does not stop when its signature expires")
        #expect(verify(now: 2_000) == nil, "not_after itself is still valid")
    }

    @Test("malformed envelopes are refused with the field named")
    func strictParsing() throws {
        let good = String(decoding: signed().json, as: UTF8.self)
        func reason(_ text: String) -> String? {
            do {
                _ = try ConfigEnvelope(json: Array(text.utf8))
                return nil
            } catch {
                return error.description
            }
        }
        #expect(reason(good) == nil)
        #expect(reason(good.replacingOccurrences(of: "\"alg\":\"ed25519\"", with: "\"alg\":\"rsa\""))?.contains("only 'ed25519'") == true)
        #expect(reason(good.replacingOccurrences(of: "{\"alg\"", with: "{\"extra\":1,\"alg\""))?.contains("unknown field 'extra'") == true)
        #expect(reason(good.replacingOccurrences(of: "\"agent\":\"*\"", with: "\"agent\":\"*\",\"env\":\"x\""))?.contains("audience.env") == true)
        let negative = reason(good.replacingOccurrences(of: "\"serial\":42", with: "\"serial\":-1"))
        #expect(negative?.contains("serial") == true, "\(negative ?? "accepted")")
        #expect(reason(good.replacingOccurrences(of: "2030-03-17T17:46:40Z", with: "2030-02-30T00:00:00Z"))?.contains("not_after") == true)
        #expect(reason(good.replacingOccurrences(of: "2030-03-17T17:46:40Z", with: "2030-03-17"))?.contains("not_after") == true)
        #expect(reason(good.replacingOccurrences(of: "\"name\":\"app\"", with: "\"name\":\"../etc\""))?.contains("name") == true)
        #expect(reason("{") != nil)
        #expect(reason(String(repeating: " ", count: ConfigEnvelope.maximumBytes + 1))?.contains("more than") == true)
    }

    @Test("audience selectors parse and print back; bad terms are named")
    func selectors() throws {
        #expect(try Audience(selector: "*") == .everyone)
        let audience = try Audience(selector: "agent=edge-*,labels.site=berlin-*,labels.ring=canary")
        #expect(audience == Audience(agent: "edge-*", labels: ["site": "berlin-*", "ring": "canary"]))
        #expect(try Audience(selector: audience.selector) == audience)
        #expect(try Audience(selector: "labels.site=x").agent == "*")
        #expect(Audience.everyone.selector == "*")
        for bad in ["site=x", "agent=", "agent=a,agent=b", "labels.=x", "", "agent"] {
            #expect(throws: Audience.SelectorError.self, "\(bad)") { try Audience(selector: bad) }
        }
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
    var failure: Failure? { if case .failure(let failure) = self { failure } else { nil } }
}

@Suite("Manifests")
struct ConfigManifestTests {
    let base = ConfigManifest.Document(
        name: "base", sha256: SHA256Digest(of: [1]), size: 1, signatureSHA256: SHA256Digest(of: [2]), signatureSize: 300)
    let modbus = ConfigManifest.Document(
        name: "modbus", sha256: SHA256Digest(of: [3]), size: 2, signatureSHA256: SHA256Digest(of: [4]), signatureSize: 301)

    @Test("a manifest survives its JSON form; the revision names the set, not its order or generation")
    func roundTrip() throws {
        let manifest = ConfigManifest(generation: 17, documents: [modbus, base])
        #expect(manifest.documents.map(\.name) == ["base", "modbus"])
        #expect(try ConfigManifest(json: manifest.json) == manifest)
        #expect(ConfigManifest(generation: 18, documents: [base, modbus]).revision == manifest.revision)
        #expect(ConfigManifest(generation: 17, documents: [base]).revision != manifest.revision)
        var changed = modbus
        changed.envelope?.sha256 = SHA256Digest(of: [5])
        #expect(ConfigManifest(generation: 17, documents: [base, changed]).revision != manifest.revision,
            "a new envelope (new serial, same document) is a new revision")
    }

    @Test("a document without an envelope: no sig_ keys, read back as such, its own revision; a lone sig_ key is refused")
    func unsigned() throws {
        var lab = modbus
        lab.envelope = nil
        let manifest = ConfigManifest(generation: 4, documents: [base, lab])
        let text = String(decoding: manifest.json, as: UTF8.self)
        #expect(text.contains(#"{"name":"modbus","sha256":"\#(lab.sha256.hex)","size":2}"#), "\(text)")
        let read = try ConfigManifest(json: manifest.json)
        #expect(read == manifest)
        #expect(read.documents[1].envelope == nil)
        #expect(read.blobs == [base.blob, base.envelope!, lab.blob])
        #expect(manifest.revision != ConfigManifest(generation: 4, documents: [base, modbus]).revision,
            "the same document with and without an envelope are different sets")
        // A manifest of a signed set keeps the revision it always had (agents and collectors of before agree).
        let signedText = "base \(base.sha256.hex) \(base.envelope!.sha256.hex)\nmodbus \(modbus.sha256.hex) \(modbus.envelope!.sha256.hex)\n"
        #expect(ConfigManifest(generation: 4, documents: [base, modbus]).revision == SHA256Digest(of: Array(signedText.utf8)))
        let unsignedText = "base \(base.sha256.hex) \(base.envelope!.sha256.hex)\nmodbus \(lab.sha256.hex) -\n"
        #expect(manifest.revision == SHA256Digest(of: Array(unsignedText.utf8)))

        func refused(_ text: String) -> String? {
            do {
                _ = try ConfigManifest(json: Array(text.utf8))
                return nil
            } catch {
                return error.reason
            }
        }
        let loneDigest = text.replacingOccurrences(of: #""size":2}"#, with: #""size":2,"sig_sha256":"\#(base.sha256.hex)"}"#)
        #expect(refused(loneDigest)?.contains("sig_sha256 and sig_size come together") == true)
        let loneSize = text.replacingOccurrences(of: #""size":2}"#, with: #""size":2,"sig_size":3}"#)
        #expect(refused(loneSize)?.contains("sig_sha256 and sig_size come together") == true)
    }

    @Test("malformed manifests are refused")
    func refusals() {
        let good = String(decoding: ConfigManifest(generation: 3, documents: [base]).json, as: UTF8.self)
        func refused(_ text: String) -> Bool { (try? ConfigManifest(json: Array(text.utf8))) == nil }
        #expect(!refused(good))
        #expect(refused(good.replacingOccurrences(of: "\"version\":1", with: "\"version\":2")))
        #expect(refused(good.replacingOccurrences(of: "\"rev\":\"sha256:", with: "\"rev\":\"sha256:0")))
        #expect(refused(good.replacingOccurrences(of: "\"name\":\"base\"", with: "\"name\":\"../x\"")))
        #expect(refused(good.replacingOccurrences(of: "\"size\":1", with: "\"size\":-1")))
        #expect(refused(good.replacingOccurrences(of: "[{", with: "[{\"name\":\"base\",\"sha256\":\"\(base.sha256.hex)\",\"size\":1,\"sig_sha256\":\"\(base.envelope!.sha256.hex)\",\"sig_size\":3},{")))
        #expect(refused("[]"))
        #expect(refused(String(repeating: " ", count: ConfigManifest.maximumBytes + 1)))
        // One digest listed with two sizes (here a second document whose bytes are the first one's envelope's).
        let twoSizes = ConfigManifest(generation: 3, documents: [
            base, .init(name: "other", sha256: base.envelope!.sha256, size: base.envelope!.size + 1, envelope: nil),
        ])
        #expect(refused(String(decoding: twoSizes.json, as: UTF8.self)))
        let sameSize = ConfigManifest(generation: 3, documents: [
            base, .init(name: "other", sha256: base.envelope!.sha256, size: base.envelope!.size, envelope: nil),
        ])
        #expect(!refused(String(decoding: sameSize.json, as: UTF8.self)), "the same blob twice with one size is one file")
    }
}
