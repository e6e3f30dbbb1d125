// SPDX-License-Identifier: MIT
/*
 * Pushed events of softibd (DESIGN principle 7, docs/events.md): SUBSCRIBE
 * turns a connection into an event stream; port, LID, SM and device changes
 * are queued to every subscriber as SIB_CTL_EVENT messages, as a kernel's
 * ib_dispatch_event tells every registered client.  Never blocks: a slow
 * subscriber holds at most SIB_EV_QUEUE_MAX events, later ones are dropped,
 * counted and reported by one OVERFLOW marker.  Single-threaded (event loop).
 */
#include <errno.h>
#include <string.h>

#include "daemon/softibd.h"

int sibd_cmd_subscribe(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
		       int *pass_fd)
{
	struct sib_ctl_subscribe *s = &m->u.subscribe;

	(void)d;
	(void)pass_fd;
	if (s->abi_version != SIB_ABI_VERSION) {
		s->abi_version = SIB_ABI_VERSION;
		return -EPROTO;
	}
	if (s->mask & ~((1u << SIB_EV_TYPE_MAX) - 2))
		return -EINVAL;
	c->ev.on = true;
	c->ev.mask = s->mask ? s->mask : (1u << SIB_EV_TYPE_MAX) - 2;
	return 0;
}

/* Queue one event message on c (the caller checked that there is room). */
static void queue_event(struct sibd *d, struct sibd_client *c, const struct sib_ctl_event *ev)
{
	struct sib_ctl_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.magic = SIB_CTL_MAGIC;
	m.hdr.op = SIB_CTL_EVENT;
	m.hdr.seq = ++c->ev.seq;
	m.u.event = *ev;
	sibd_client_send(d, c, &m, -1);
	d->ctr.events++;
}

/*
 * Give ev to c, or count it lost.  One slot is kept for the OVERFLOW marker,
 * which goes out before the next event that fits, or once the queue drains
 * (sibd_event_drained) if no event follows, so that a subscriber learns
 * about every gap in order (and then re-reads the fabric map), the last
 * one included.
 */
static void push_one(struct sibd *d, struct sibd_client *c, const struct sib_ctl_event *ev)
{
	struct sib_ctl_event mark;

	if (c->dead || !c->ev.on || !(c->ev.mask & (1u << ev->type)))
		return;
	if (c->out_len + 1 >= SIB_EV_QUEUE_MAX) {
		c->ev.lost++;
		c->ev.dropped++;
		d->ctr.events_dropped++;
		return;
	}
	if (c->ev.lost) {
		memset(&mark, 0, sizeof(mark));
		mark.type = SIB_EV_OVERFLOW;
		mark.lost = c->ev.lost;
		c->ev.lost = 0;
		queue_event(d, c, &mark);
	}
	queue_event(d, c, ev);
}

void sibd_event_drained(struct sibd *d, struct sibd_client *c)
{
	struct sib_ctl_event mark;

	if (c->dead || !c->ev.on || !c->ev.lost || c->out_len + 1 >= SIB_EV_QUEUE_MAX)
		return;
	memset(&mark, 0, sizeof(mark));
	mark.type = SIB_EV_OVERFLOW;
	mark.lost = c->ev.lost;
	c->ev.lost = 0;
	queue_event(d, c, &mark);
}

void sibd_event_push(struct sibd *d, const struct sib_ctl_event *ev)
{
	struct sibd_client *c;

	for (c = d->clients; c; c = c->next)
		push_one(d, c, ev);
}

/*
 * Describe a port (or the whole device, port_num 0) as softibd's own record
 * (d->devs[]) says it is now, for an event of type about devs[dev_index].
 */
void sibd_event_fill(struct sibd *d, struct sib_ctl_event *ev, enum sib_event_type type,
		     uint32_t dev_index, uint8_t port_num)
{
	const struct sib_shm_device *dev = &d->devs[dev_index];
	const struct sib_shm_port *p;

	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->dev_index = dev_index;
	ev->dev_gen = dev->gen;
	ev->port_num = port_num;
	memcpy(ev->name, dev->name, sizeof(ev->name));
	ev->name[sizeof(ev->name) - 1] = '\0';
	if (port_num >= 1 && port_num <= dev->num_ports) {
		p = &dev->ports[port_num - 1];
		ev->state = p->state;
		ev->phys_state = p->phys_state;
		ev->lid = p->lid;
		ev->lmc = p->lmc;
		ev->sm_lid = p->sm_lid;
	}
}

void sibd_event_port(struct sibd *d, enum sib_event_type type, uint32_t dev_index,
		     uint8_t port_num)
{
	struct sib_ctl_event ev;

	sibd_event_fill(d, &ev, type, dev_index, port_num);
	sibd_event_push(d, &ev);
}
