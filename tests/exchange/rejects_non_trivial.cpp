// SPDX-License-Identifier: BSD-3-Clause
// Must NOT compile: std::string is not trivially copyable, so it cannot be
// sent as bytes (ctest expects this build to fail).
#include <domex/exchange/exchange.hpp>

#include <string>

int main() {
  domex::Outbox<std::string> outbox;
  return static_cast<int>(outbox.message_count());
}
