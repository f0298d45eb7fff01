#ifndef UPLINK_CSODIUM_SHIM_H
#define UPLINK_CSODIUM_SHIM_H
// Debian's libsodium (libsodium-dev): SHA-256 and Ed25519 for signed remote configuration documents.
#include <sodium.h>
#endif
