import UplinkCore
import UplinkFiles
import UplinkRemoteConfig

/// Writes a fresh public key file, as `uplink config keygen` does, for configurations that list trusted keys.
@discardableResult
func writePublicKey(to path: String, id: String) throws -> SigningKeyFile.SigningKey {
    let signing = SigningKeyFile.SigningKey(id: id, key: .generate())
    try AtomicFile.write(
        Array(SigningKeyFile.publicText(SigningKeyFile.TrustedKey(id: id, key: signing.key.publicKey)).utf8), to: path)
    return signing
}
