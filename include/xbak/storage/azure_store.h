// ObjectStore on Azure Blob Storage (or Azurite, its emulator), on the HTTP
// engine every object store shares (storage/http_store.h). Its own REST
// protocol, not S3's: objects are block blobs stored by one Put Blob each
// (Content-MD5 checked by the service and returned), ranged Get Blob, List
// Blobs with a delimiter and markers, one Delete Blob per key.
//
// Authentication: Shared Key (the account's key signs every request; see
// azure_dialect.cc for the string to sign) or a SAS token appended to every
// URL (then no key is needed, and what the token allows is all it can do).
#pragma once

#include <memory>
#include <string>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/http_options.h"
#include "xbak/storage/object_store.h"

namespace xbak::storage {

struct AzureConfig : HttpOptions {
  std::string account;    // storage account name
  std::string container;  // must exist
  // "https://ACCOUNT.blob.core.windows.net" when empty; an emulator's has
  // the account in its path: "http://127.0.0.1:10000/devstoreaccount1".
  std::string endpoint;
  std::string access_key;  // Shared Key: the account key, base64
  std::string sas_token;   // or a SAS token: "sv=...&sig=..." (a leading '?' is dropped)
  std::string tier;        // put: access tier of every blob (Hot, Cool, Cold, Archive; "": the account's)
};

// Checks the configuration (names, endpoint, exactly one of key and SAS)
// and builds the store. Nothing is sent yet.
Result<std::unique_ptr<ObjectStore>> MakeAzureStore(EventLoop& loop, AzureConfig config);

}  // namespace xbak::storage
