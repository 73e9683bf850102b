// The Road page's map drawn with Leaflet (bundled, loaded only by the Road page). Vector layers
// only, so no image is needed: a circle marker per point event and a line per LineString event,
// coloured by type, more opaque and larger the more confident the event is. The background is
// the deployment's raster tiles (GET /v1/meta/basemap), or none: the container's plain colour.
// Each shape carries the classes road-event and ev-<event_id> and a data-event-id, and can be
// reached with Tab and chosen with Enter.
// Leaflet's ES module build (its package's main is UMD), typed by @types/leaflet (env.d.ts).
import * as L from 'leaflet/dist/leaflet-src.esm.js';
import 'leaflet/dist/leaflet.css';
import type { EventPublic } from '../api';
import { typeLabel } from '../pages/alertrules';
import type { MapHandle, MapOptions } from './mapview';
import { formatPercent, typeColour } from './state';

/** drawn is what a shape was drawn from: it is drawn again only when that changes. */
function drawnKey(e: EventPublic, selected: boolean): string {
  return JSON.stringify([e.type, e.lat, e.lon, e.geometry?.coordinates ?? null, e.confidence, selected]);
}

function tooltip(e: EventPublic): HTMLElement {
  // Built as text: a type is open vocabulary and never read as HTML.
  const el = document.createElement('span');
  el.textContent = `${typeLabel(e.type)} · ${formatPercent(e.confidence)} confidence`;
  return el;
}

/** leafletMap draws the map in el. */
export function leafletMap(el: HTMLElement, o: MapOptions): MapHandle {
  const map = L.map(el, { center: [o.view.lat, o.view.lon], zoom: o.view.zoom, zoomControl: true, attributionControl: true });
  map.attributionControl.setPrefix('Leaflet');
  if (o.basemap.tiles) {
    // The console sends no Referer (Referrer-Policy: no-referrer); tile servers such as
    // OpenStreetMap's ask for one, so the tiles alone send the console's origin (docs/console.md §5).
    const tiles = L.tileLayer(o.basemap.tiles, {
      attribution: o.basemap.attribution,
      maxZoom: 19,
      referrerPolicy: 'strict-origin-when-cross-origin',
    });
    let loaded = 0;
    let failed = 0;
    let told = false;
    tiles.on('tileload', () => loaded++);
    tiles.on('tileerror', () => {
      failed++;
      if (!told && loaded === 0 && failed >= 4) {
        told = true;
        o.onTilesFailed();
      }
    });
    tiles.addTo(map);
  }
  const area = L.circle([o.view.lat, o.view.lon], {
    radius: 1,
    interactive: false,
    color: '#1d4ed8',
    weight: 2,
    dashArray: '6 6',
    fillColor: '#1d4ed8',
    fillOpacity: 0.04,
  }).addTo(map);
  const layer = L.featureGroup().addTo(map);
  const shapes = new Map<string, { shape: L.Path; key: string }>();

  const view = () => {
    const c = map.getCenter();
    return { lat: c.lat, lon: c.lng, zoom: map.getZoom() };
  };
  map.on('moveend', () => o.onMove(view()));

  // Leaflet measures its container when made; a container resized later (a phone turned, the
  // page's columns rearranged) is measured again.
  // A callback may still be queued when the page is left: a removed map is not measured.
  let removed = false;
  const resize =
    typeof ResizeObserver === 'function' ? new ResizeObserver(() => removed || map.invalidateSize({ animate: false })) : null;
  resize?.observe(el);

  const draw = (e: EventPublic, selected: boolean): L.Path => {
    const colour = typeColour(e.type);
    const c = Math.max(0, Math.min(1, e.confidence));
    const common = {
      className: `road-event ev-${e.event_id}${selected ? ' selected' : ''}`,
      color: selected ? '#111827' : colour,
      fillColor: colour,
      bubblingMouseEvents: false,
    };
    let shape: L.Path;
    if (e.geometry && e.geometry.coordinates.length >= 2) {
      shape = L.polyline(
        e.geometry.coordinates.map(([x, y]) => [y, x] as L.LatLngTuple),
        { ...common, color: colour, weight: (selected ? 8 : 5) + 2 * c, opacity: 0.35 + 0.6 * c },
      );
    } else {
      shape = L.circleMarker([e.lat, e.lon], {
        ...common,
        radius: 5 + 7 * c,
        weight: selected ? 4 : 2,
        opacity: 0.9,
        fillOpacity: 0.2 + 0.7 * c,
      });
    }
    shape.bindTooltip(tooltip(e));
    shape.on('click', () => o.onSelect(e.event_id));
    shape.on('add', () => {
      const path = shape.getElement();
      if (!path) return;
      path.setAttribute('data-event-id', e.event_id);
      path.setAttribute('tabindex', '0');
      path.setAttribute('role', 'button');
      path.setAttribute('aria-label', `${typeLabel(e.type)}, ${formatPercent(e.confidence)} confidence`);
      path.addEventListener('keydown', (k) => {
        const key = (k as KeyboardEvent).key;
        if (key === 'Enter' || key === ' ') {
          k.preventDefault();
          o.onSelect(e.event_id);
        }
      });
    });
    return shape;
  };

  return {
    setEvents(events, selected) {
      const seen = new Set<string>();
      for (const e of events) {
        seen.add(e.event_id);
        const key = drawnKey(e, e.event_id === selected);
        const had = shapes.get(e.event_id);
        if (had?.key === key) continue;
        if (had) layer.removeLayer(had.shape);
        const shape = draw(e, e.event_id === selected);
        shape.addTo(layer);
        shapes.set(e.event_id, { shape, key });
      }
      for (const [id, had] of shapes) {
        if (!seen.has(id)) {
          layer.removeLayer(had.shape);
          shapes.delete(id);
        }
      }
      if (selected) shapes.get(selected)?.shape.bringToFront();
    },
    setArea(a) {
      area.setLatLng([a.lat, a.lon]);
      area.setRadius(a.radius);
    },
    show(e) {
      const shape = shapes.get(e.event_id)?.shape;
      if (shape instanceof L.Polyline) {
        map.fitBounds(shape.getBounds(), { maxZoom: Math.max(map.getZoom(), 14), padding: [24, 24] });
      } else {
        map.setView([e.lat, e.lon], Math.max(map.getZoom(), 12));
      }
    },
    view,
    destroy() {
      removed = true;
      resize?.disconnect();
      // A pan or zoom still running would step a removed map (Leaflet's _leaflet_pos error).
      map.stop();
      map.remove();
    },
  };
}
