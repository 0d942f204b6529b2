// SPDX-License-Identifier: Apache-2.0
// shop: purchases granted exactly once, whatever crashes. A client that was charged by a store
// (an app store, a payment provider) sends shop.Buy(receipt, item); the item goes into the
// player's "shop" profile and the sale into the shop's ledger (the manual key "#sales" of the same
// store) in one profile transaction whose id is the receipt ("shop/<user>/<receipt>"). The kernel
// records that id in the same database transaction, so a receipt sent again, after a crash, a
// reconnect or from another server on the same database, is refused as a replay and answered
// `replay: true` without granting twice. The answer goes out only after the commit: an
// acknowledged purchase is never lost, and a client that saw no answer sends the receipt again.
// The catalog is fixed here: gems and swords without limit, crowns while the stock lasts
// (plugins.shop.crown_stock, 100); plugins.shop.rate caps each session's purchases a second (20,
// with bursts of twice that). Documents: {"items": {"gem": 3, ...}} for a player, the
// same shape for the ledger (the count sold of each item).
#include <flatbuffers/flatbuffers.h>
#include <molt/scope_exit.h>

#include <charconv>
#include <cstdio>
#include <deque>
#include <map>
#include <molt/molt.hpp>
#include <string>
#include <string_view>

#include "shop_generated.h"

namespace molt::plugins::shop {

// {"items": {...}} documents, as this plugin writes them: a flat object of item -> count. Only
// the "items" object is read and rewritten; whatever else a document holds is kept as it is.
using Counts = std::map<std::string, std::int64_t>;

// The bounds of the "items" object's value in `doc`, or npos when there is none.
std::pair<std::size_t, std::size_t> ItemsSpan(std::string_view doc) {
  const std::size_t key = doc.find("\"items\"");
  const std::size_t open = key == std::string_view::npos ? key : doc.find('{', key);
  const std::size_t close = open == std::string_view::npos ? open : doc.find('}', open);
  if (close == std::string_view::npos) {
    return {std::string_view::npos, std::string_view::npos};
  }
  return {open, close + 1};
}

// The counts in `doc`; false when its "items" object is not one this plugin wrote.
bool ReadCounts(std::string_view doc, Counts* out) {
  const auto [begin, end] = ItemsSpan(doc);
  if (begin == std::string_view::npos) {
    return false;
  }
  std::string_view body = doc.substr(begin + 1, end - begin - 2);
  while (true) {
    const std::size_t q1 = body.find('"');
    if (q1 == std::string_view::npos) {
      return body.find_first_not_of(" \n\t,") == std::string_view::npos;
    }
    const std::size_t q2 = body.find('"', q1 + 1);
    const std::size_t colon = q2 == std::string_view::npos ? q2 : body.find(':', q2);
    if (colon == std::string_view::npos) {
      return false;
    }
    std::size_t at = body.find_first_not_of(' ', colon + 1);
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(body.data() + (at == std::string_view::npos ? body.size() : at),
                                   body.data() + body.size(), n);
    if (ec != std::errc()) {
      return false;
    }
    (*out)[std::string(body.substr(q1 + 1, q2 - q1 - 1))] = n;
    body.remove_prefix(static_cast<std::size_t>(p - body.data()));
  }
}

// `doc` with its "items" object replaced by `counts`.
void WriteCounts(std::string& doc, const Counts& counts) {
  std::string items = "{";
  for (const auto& [name, n] : counts) {
    items += (items.size() > 1 ? ",\"" : "\"") + name + "\":" + std::to_string(n);
  }
  items += '}';
  const auto [begin, end] = ItemsSpan(doc);
  doc.replace(begin, end - begin, items);
}

// `text` as the inside of a JSON string.
std::string Escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

class Shop : public molt::Service {
 public:
  static constexpr const char* kName = "shop";
  static constexpr const char* kVersion = "0.1.0";
  static constexpr const char* kDescription = "purchases granted exactly once, by receipt";
  static constexpr const char* kLedger = "#sales";
  static constexpr const char* kStopped =
      "the shop stopped (a swap or the close): send the receipt again";

  molt::Status Init() override {
    crown_stock_ = host().ConfigInt("crown_stock", 100);
    molt::ProfileOptions o;
    o.defaults = R"({"items":{}})";
    o.schema_version = 1;
    o.validate = [](std::string_view doc) -> molt::Status {
      Counts ignored;
      return ReadCounts(doc, &ignored)
                 ? molt::Status::Ok()
                 : molt::Status::Error("a shop profile without an \"items\" object of counts",
                                       MOLT_ERR_REJECTED);
    };
    molt::Result<molt::ProfileStore> store = host().DeclareProfiles("shop", std::move(o));
    if (!store.ok()) {
      if (store.status().code() != MOLT_ERR_UNSUPPORTED) {
        return store.status();
      }
      host().Info("not selling: ", store.status().message());  // a host without profiles
      return molt::Status::Ok();
    }
    profiles_ = *store;
    if (!MOLT_API_HAS(host().api(), channel_declare)) {
      return molt::Status::Ok();
    }
    molt::ChannelOptions buy;
    buy.schema = "molt.shop.Purchase";
    buy.rules = {molt::MaxLengthRule(0, "receipt", 64), molt::MaxLengthRule(1, "item", 32)};
    buy.rate = host().ConfigDouble("rate", 20);  // purchases a second per session
    buy.burst = 2 * buy.rate;
    MOLT_ASSIGN_OR_RETURN(buy_,
                          host().DeclareRequest(
                              "shop.Buy", buy,
                              [](std::string_view p) {
                                flatbuffers::Verifier v(
                                    reinterpret_cast<const std::uint8_t*>(p.data()), p.size());
                                return v.VerifyBuffer<molt::shop::Purchase>(nullptr);
                              },
                              [this](molt::SessionId s, std::string_view p, molt_request_t r) {
                                return Queue(s, p, r);
                              }));
    return molt::Status::Ok();
  }

  // A swap or the close: what waits is answered now rather than at its timeout, so its client
  // sends the receipt again (to the next generation, or the next server). The purchase being
  // granted may still commit: sent again, it comes back as a replay, never granted twice.
  molt::Status Stop() override {
    if (granting_ != 0 || !queue_.empty()) {
      host().Info("stopped with ", queue_.size() + (granting_ != 0 ? 1 : 0),
                  " purchases unanswered: their clients send them again");
    }
    if (granting_ != 0) {
      (void)host().Reply(granting_, MOLT_ERR_STATE, kStopped);
    }
    for (const Purchase& p : queue_) {
      (void)host().Reply(p.request, MOLT_ERR_STATE, kStopped);
    }
    queue_.clear();
    return molt::Status::Ok();
  }

  // Its own tests (ABI 1.8; moltd --self-test, molt build): the documents' counts, read and
  // written the way every grant reads and writes them.
  void SelfTest(molt::SelfTests& tests) override {
    tests.Run("counts round-trip through a document", []() -> molt::Status {
      std::string doc = R"({"items": {}, "other": 1})";
      WriteCounts(doc, {{"crown", 1}, {"gem", 12}});
      Counts back;
      if (!ReadCounts(doc, &back) || back != Counts{{"crown", 1}, {"gem", 12}}) {
        return molt::Status(MOLT_ERR_INTERNAL, "read back wrong from " + doc);
      }
      return doc == R"({"items": {"crown":1,"gem":12}, "other": 1})"
                 ? molt::Status::Ok()
                 : molt::Status(MOLT_ERR_INTERNAL, "wrote " + doc);
    });
    Counts ignored;
    tests.Check("a document without counts is refused", !ReadCounts(R"({"coins": 3})", &ignored),
                "read counts from a document that has none");
    tests.Check("receipts are escaped in analytics", Escaped("a\"b\\c\n") == "a\\\"b\\\\c\\u000a",
                "escaped as " + Escaped("a\"b\\c\n"));
  }

 private:
  struct Purchase {
    molt::SessionId session;
    molt_request_t request;
    std::string user;
    std::string receipt;
    std::string item;
  };

  // Checks the purchase and queues it for the checkout: one transaction at a time, since every
  // one of them writes the ledger (a second one at once would be refused as Busy).
  molt::Status Queue(molt::SessionId s, std::string_view payload, molt_request_t r) {
    const auto* p = flatbuffers::GetRoot<molt::shop::Purchase>(payload.data());
    Purchase purchase{s, r, "", p->receipt() ? p->receipt()->str() : "",
                      p->item() ? p->item()->str() : ""};
    if (purchase.receipt.empty()) {
      return host().Reply(r, MOLT_ERR_INVALID_ARGUMENT, "a purchase needs its receipt id");
    }
    if (purchase.item != "gem" && purchase.item != "sword" && purchase.item != "crown") {
      return host().Reply(r, MOLT_ERR_INVALID_ARGUMENT,
                          "the shop sells no \"" + purchase.item + "\" (gem, sword, crown)");
    }
    MOLT_ASSIGN_OR_RETURN(molt_session_info who, host().GetSession(s));
    purchase.user = who.user;
    queue_.push_back(std::move(purchase));
    if (!checkout_) {
      molt::ProcessOptions o;
      o.name = "shop checkout";
      MOLT_ASSIGN_OR_RETURN(checkout_, host().Spawn([this] { Checkout(); }, o));
      return checkout_.Start();
    }
    return molt::Status::Ok();
  }

  // The checkout process: grants the queued purchases in order, then ends.
  void Checkout() {
    molt::ScopeExit done = [this]() noexcept { checkout_ = molt::Process(); };
    while (!queue_.empty()) {
      Purchase p = std::move(queue_.front());
      queue_.pop_front();
      granting_ = p.request;
      const molt::Status st = Grant(p);
      granting_ = 0;
      if (!st.ok()) {
        (void)host().Reply(p.request, st.code(), st.message());
      }
    }
  }

  // Grants one purchase and answers it; an error return is answered by Checkout.
  molt::Status Grant(const Purchase& p) {
    if (molt::Status st = AwaitLoaded(p.session); !st.ok()) {
      return st;
    }
    MOLT_ASSIGN_OR_RETURN(molt::SessionId ledger, Ledger());
    const std::string item = p.item;
    const std::int64_t stock = crown_stock_;
    molt::Result<molt::Completion> c = profiles_.Transact(
        p.session, ledger,
        [&item, stock](std::string& player, std::string& sales) -> molt::Status {
          Counts owned;
          Counts sold;
          if (!ReadCounts(player, &owned) || !ReadCounts(sales, &sold)) {
            return molt::Status::Error("a shop document without its \"items\" counts");
          }
          if (item == "crown" && sold[item] >= stock) {
            return molt::Status(MOLT_ERR_REJECTED, "sold out");
          }
          ++owned[item];
          ++sold[item];
          WriteCounts(player, owned);
          WriteCounts(sales, sold);
          return molt::Status::Ok();
        },
        "shop/" + p.user + "/" + p.receipt);
    if (!c.ok()) {
      return c.status();
    }
    molt::Result<molt::Host::WaitResult> w = host().Wait(*c);
    (void)host().Release(*c);
    if (!w.ok()) {
      return w.status();
    }
    const bool replay = w->code == MOLT_ERR_ALREADY_EXISTS;  // DuplicateTransaction: granted before
    if (w->code != MOLT_OK && !replay) {
      if (w->payload.rfind("Aborted", 0) == 0) {
        return molt::Status(MOLT_ERR_REJECTED, "sold out: every " + p.item + " is sold (" +
                                                   std::to_string(crown_stock_) + ")");
      }
      return molt::Status(w->code, "not granted, send the receipt again: " + w->payload);
    }
    Counts owned;
    molt::Result<std::string> doc = profiles_.Get(p.session);
    if (doc.ok()) {
      ReadCounts(*doc, &owned);
    }
    host().Info(replay ? "receipt " : "granted ", p.receipt,
                replay ? " granted before, to " : " to ", p.user, ": ", p.item, " (", owned[p.item],
                " owned)");
    if (!replay) {  // product analytics (ABI 1.5): the host counts it if it drops it
      (void)host().Track("purchase", p.session, 1,
                         R"({"item":")" + p.item + R"(","receipt":")" + Escaped(p.receipt) + "\"}");
    }
    flatbuffers::FlatBufferBuilder b(128);
    b.Finish(molt::shop::CreateGranted(b, b.CreateString(p.receipt), b.CreateString(p.item),
                                       owned[p.item], replay));
    return host().Reply(
        p.request, MOLT_OK,
        std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()));
  }

  // Waits (in the checkout) until the buyer's profile has loaded: a purchase sent right after
  // the Hello arrives while it loads.
  molt::Status AwaitLoaded(molt::SessionId s) {
    for (int i = 0; i < 200; ++i) {  // 10 s
      MOLT_ASSIGN_OR_RETURN(std::int32_t state, profiles_.State(s));
      if (state == MOLT_PROFILE_LOADED) {
        return molt::Status::Ok();
      }
      if (state != MOLT_PROFILE_PENDING) {
        return molt::Status(MOLT_ERR_STATE, "your shop profile is not loaded (state " +
                                                std::to_string(state) + "): join again");
      }
      if (molt::Status st = host().Sleep(0.05); !st.ok()) {
        return st;
      }
    }
    return molt::Status(MOLT_ERR_TIMEOUT, "your shop profile did not load in 10 s: try again");
  }

  // The ledger's id, loading it first when this server does not hold it yet.
  molt::Result<molt::SessionId> Ledger() {
    molt::Result<molt::SessionId> id = profiles_.KeySession(kLedger);
    if (id.ok()) {
      return id;
    }
    MOLT_ASSIGN_OR_RETURN(molt::Completion c, profiles_.KeyLoad(kLedger));
    molt::Result<molt::Host::WaitResult> w = host().Wait(c);
    (void)host().Release(c);
    if (!w.ok()) {
      return w.status();
    }
    if (w->code != MOLT_OK) {
      return molt::Status(w->code, "the shop's ledger did not load: " + w->payload);
    }
    return profiles_.KeySession(kLedger);
  }

  std::int64_t crown_stock_ = 100;
  molt::ProfileStore profiles_;
  molt::Channel buy_;
  std::deque<Purchase> queue_;
  molt::Process checkout_;       // running while purchases wait
  molt_request_t granting_ = 0;  // the purchase the checkout is granting
};

}  // namespace molt::plugins::shop

MOLT_PLUGIN(molt::plugins::shop::Shop)
