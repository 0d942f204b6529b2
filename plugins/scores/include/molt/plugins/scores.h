/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File: molt/plugins/scores.h
 *
 * The "scores.v1" interface the scores plugin exports (C99). A plugin that lists "scores" among
 * its dependencies fetches it with api->service_interface(ctx, "scores", "scores.v1", &ref) and
 * calls ((const molt_scores_v1*)ref.vtable)->add(ref.self, ...). Check ref.vtable_size before
 * using slots added later (this struct is append-only, like molt.h).
 *
 * Thread safety: the kernel thread only.
 */
#ifndef MOLT_PLUGINS_SCORES_H_
#define MOLT_PLUGINS_SCORES_H_

#include <molt/molt.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOLT_SCORES_INTERFACE "scores.v1"

/** @brief One leaderboard row; `player` is valid until the next call into the interface. */
typedef struct molt_score_entry {
  const char* player;
  int64_t points;
} molt_score_entry;

typedef struct molt_scores_v1 {
  /** @brief Adds `points` (may be negative) to `player`'s score and publishes
   *  Score.Changed(player, total). @param[out] out_total  may be NULL. */
  molt_status_t (*add)(void* self, const char* player, int64_t points, int64_t* out_total);
  /** @brief The current score of `player` (0 when unknown). */
  int64_t (*get)(void* self, const char* player);
  /** @brief Writes up to `max` rows, best first, and returns how many it wrote. */
  size_t (*top)(void* self, molt_score_entry* out, size_t max);
  /** @brief Clears every score (a new round or season). */
  void (*reset)(void* self);
} molt_scores_v1;

#ifdef __cplusplus
}
#endif

#endif /* MOLT_PLUGINS_SCORES_H_ */
