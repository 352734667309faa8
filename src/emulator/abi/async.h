/*
 * async.h - the workers of the nrta_* API (internal).
 */
#ifndef NRTEMU_ASYNC_H
#define NRTEMU_ASYNC_H

/*
 * Let every worker finish its queue and stop (at nrt_close(), after the
 * runtime is marked closed, so queued requests fail fast with NRT_CLOSED).
 * Must not be called with the runtime's lock held: the workers take it.
 */
void nrtemu__async_close(void);

#endif /* NRTEMU_ASYNC_H */
