// The double's NameNode delegation-token secret manager: what a Hadoop 3.3.6 NameNode does with
// an HDFS delegation token (kerberos/ K5.5, webhdfs/07-08), on an injected clock.

#include "delegation_token_store.h"

#include "core/testing.h"

namespace loom::yarn_double {
namespace {

using hadoop::ParseDelegationTokenIdentifier;
using hadoop::Token;
using ::testing::HasSubstr;

struct Clock {
  int64_t now = 1795374662727;
};

DelegationTokenStore MakeStore(Clock* clock) {
  DelegationTokenStore::Options o;
  o.renew_interval_ms = 1000;
  o.max_lifetime_ms = 5000;
  o.now_ms = [clock] { return clock->now; };
  return DelegationTokenStore(o);
}

TEST(ShortNameTest, DefaultAuthToLocal) {
  EXPECT_EQ(ShortName("rm/localhost@LOOM.TEST"), "rm");
  EXPECT_EQ(ShortName("root@LOOM.TEST"), "root");
  EXPECT_EQ(ShortName("root"), "root");
}

TEST(DelegationTokenStoreTest, MintsTheRecordedIdentifierShape) {
  Clock clock;
  DelegationTokenStore store = MakeStore(&clock);
  Token a = store.Mint("root@LOOM.TEST", "rm/localhost@LOOM.TEST");
  Token b = store.Mint("root", "root");
  EXPECT_EQ(a.kind, "HDFS_DELEGATION_TOKEN");
  EXPECT_EQ(a.service, "");
  EXPECT_EQ(a.password.size(), 20u);  // HMAC-SHA1
  auto id = ParseDelegationTokenIdentifier(a.identifier);
  ASSERT_OK(id);
  EXPECT_EQ(id->owner, "root@LOOM.TEST");
  EXPECT_EQ(id->renewer, "rm");  // stored short, as the NameNode does
  EXPECT_EQ(id->real_user, "");
  EXPECT_EQ(id->issue_date_ms, clock.now);
  EXPECT_EQ(id->max_date_ms, clock.now + 5000);
  EXPECT_EQ(id->sequence_number, 1);
  auto id_b = ParseDelegationTokenIdentifier(b.identifier);
  ASSERT_OK(id_b);
  EXPECT_EQ(id_b->sequence_number, 2);
  EXPECT_EQ(id_b->master_key_id, id->master_key_id);
  EXPECT_NE(a.password, b.password);
  ASSERT_EQ(store.Minted().size(), 2u);
  EXPECT_EQ(store.Minted()[0], *id);
  auto verified = store.Verify(a);
  ASSERT_OK(verified);
  EXPECT_EQ(*verified, *id);
  auto password = store.RetrievePassword(a.identifier);
  ASSERT_OK(password);
  EXPECT_EQ(*password, a.password);
}

TEST(DelegationTokenStoreTest, VerifyRefusesForgedUnknownAndExpired) {
  Clock clock;
  DelegationTokenStore store = MakeStore(&clock);
  Token t = store.Mint("root@LOOM.TEST", "rm");
  Token forged = t;
  forged.password[0] ^= 1;
  EXPECT_STATUS(store.Verify(forged), kPermissionDenied, HasSubstr("password doesn't match"));
  // Another store (another NameNode) never minted it.
  DelegationTokenStore other = MakeStore(&clock);
  EXPECT_STATUS(other.Verify(t), kPermissionDenied, HasSubstr("can't be found in cache"));
  EXPECT_STATUS(other.RetrievePassword(t.identifier), kPermissionDenied, HasSubstr("can't be found in cache"));
  clock.now += 1001;  // past the renew interval, never renewed
  EXPECT_STATUS(store.Verify(t), kPermissionDenied, HasSubstr("is expired"));
  Token garbage = t;
  garbage.identifier = "xx";
  EXPECT_FALSE(store.Verify(garbage).ok());
}

TEST(DelegationTokenStoreTest, OnlyTheRenewerRenews) {
  Clock clock;
  DelegationTokenStore store = MakeStore(&clock);
  Token t = store.Mint("root@LOOM.TEST", "rm/localhost@LOOM.TEST");
  // webhdfs/07: the owner is not the renewer.
  EXPECT_STATUS(store.Renew(t, "root@LOOM.TEST"), kPermissionDenied,
                HasSubstr("root tries to renew a token (token for root: HDFS_DELEGATION_TOKEN owner=root@LOOM.TEST, "
                          "renewer=rm, realUser=, issueDate="));
  EXPECT_STATUS(store.Renew(t, "root"), kPermissionDenied, HasSubstr("with non-matching renewer rm"));
  EXPECT_EQ(store.RenewCount(t), 0);
  clock.now += 900;
  auto expiry = store.Renew(t, "rm/localhost@LOOM.TEST");
  ASSERT_OK(expiry);
  EXPECT_EQ(*expiry, clock.now + 1000);
  EXPECT_EQ(store.RenewCount(t), 1);
  clock.now += 900;  // alive only because it was renewed
  EXPECT_OK(store.Verify(t));
  // Renewal never goes past maxDate.
  clock.now += 900;
  ASSERT_OK(store.Renew(t, "rm"));
  clock.now += 900;
  ASSERT_OK(store.Renew(t, "rm"));
  clock.now += 900;
  auto capped = store.Renew(t, "rm");
  ASSERT_OK(capped);
  auto id = ParseDelegationTokenIdentifier(t.identifier);
  EXPECT_EQ(*capped, id->max_date_ms);
  clock.now = id->max_date_ms + 1;
  EXPECT_STATUS(store.Renew(t, "rm"), kPermissionDenied, HasSubstr("expired"));
}

TEST(DelegationTokenStoreTest, OwnerOrRenewerCancels) {
  Clock clock;
  DelegationTokenStore store = MakeStore(&clock);
  Token t = store.Mint("root@LOOM.TEST", "rm");
  Token u = store.Mint("root@LOOM.TEST", "rm");
  EXPECT_STATUS(store.Cancel(t, "nn/localhost@LOOM.TEST"), kPermissionDenied,
                HasSubstr("nn is not authorized to cancel the token"));
  EXPECT_FALSE(store.Cancelled(t));
  EXPECT_OK(store.Cancel(t, "root"));  // webhdfs/08: the owner
  EXPECT_OK(store.Cancel(u, "rm/localhost@LOOM.TEST"));  // rpc/05: the renewer (the RM)
  EXPECT_TRUE(store.Cancelled(t));
  EXPECT_TRUE(store.Cancelled(u));
  EXPECT_STATUS(store.Verify(t), kPermissionDenied, HasSubstr("can't be found in cache"));
  EXPECT_STATUS(store.Renew(u, "rm"), kPermissionDenied, HasSubstr("unknown token"));
  EXPECT_STATUS(store.Cancel(t, "root"), kPermissionDenied, HasSubstr("Token not found"));
}

}  // namespace
}  // namespace loom::yarn_double
