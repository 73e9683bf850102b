// The Road page's map, behind an interface the page drives: the Leaflet implementation
// (leafletmap.ts) is loaded only when a Road page opens, and tests give the page a stand-in.
// When the map cannot be drawn, the page still lists and inspects events.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { AreaQuery, Basemap, EventPublic } from '../api';
import { Notice } from '../ui';

/** MapView is where the map shows: its centre and zoom. */
export interface MapView {
  lat: number;
  lon: number;
  zoom: number;
}

/** MapOptions are what a map is made with. */
export interface MapOptions {
  view: MapView;
  /** basemap is the tiles and their attribution; tiles null draws on a plain background. */
  basemap: Basemap;
  /** label names the map for assistive technology. */
  label: string;
  /** onSelect is called when an event's shape is clicked (or chosen with Enter). */
  onSelect: (eventId: string) => void;
  /** onMove is called when the map has moved. */
  onMove: (v: MapView) => void;
  /** onTilesFailed is called once when the background tiles cannot be loaded. */
  onTilesFailed: () => void;
}

/** MapHandle is a drawn map. */
export interface MapHandle {
  /** setEvents draws the events, the selected one stressed. */
  setEvents(events: EventPublic[], selected: string | null): void;
  /** setArea draws the query circle. */
  setArea(a: Pick<AreaQuery, 'lat' | 'lon' | 'radius'>): void;
  /** show brings an event into view. */
  show(e: EventPublic): void;
  /** view is where the map shows now. */
  view(): MapView;
  destroy(): void;
}

/** CreateMap draws a map in el. */
export type CreateMap = (el: HTMLElement, o: MapOptions) => Promise<MapHandle>;

/** createLeafletMap loads Leaflet and draws the map with it. */
export const createLeafletMap: CreateMap = async (el, o) => (await import('./leafletmap')).leafletMap(el, o);

/**
 * RoadMap is the map's element: it makes the map once, then hands it the events, the
 * selection and the area as they change. handle receives the map once drawn.
 */
export function RoadMap(props: {
  create: CreateMap;
  view: MapView;
  basemap: Basemap;
  events: EventPublic[];
  selected: string | null;
  area: Pick<AreaQuery, 'lat' | 'lon' | 'radius'>;
  onSelect: (id: string) => void;
  onMove: (v: MapView) => void;
  handle: { current: MapHandle | null };
}) {
  const el = useRef<HTMLDivElement>(null);
  const [map, setMap] = useState<MapHandle | null>(null);
  const [failed, setFailed] = useState(false);
  const [noTiles, setNoTiles] = useState(false);
  // The callbacks of the latest render, for the map made with the first.
  const cb = useRef(props);
  cb.current = props;

  useEffect(() => {
    let live = true;
    let made: MapHandle | null = null;
    props
      .create(el.current!, {
        view: props.view,
        basemap: props.basemap,
        label: 'Map of road events',
        onSelect: (id) => cb.current.onSelect(id),
        onMove: (v) => cb.current.onMove(v),
        onTilesFailed: () => live && setNoTiles(true),
      })
      .then(
        (m) => {
          if (!live) {
            m.destroy();
            return;
          }
          made = m;
          cb.current.handle.current = m;
          setMap(m);
        },
        () => live && setFailed(true),
      );
    return () => {
      live = false;
      made?.destroy();
      cb.current.handle.current = null;
    };
    // The map is made once; what changes is handed to it below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => map?.setEvents(props.events, props.selected), [map, props.events, props.selected]);
  useEffect(() => map?.setArea(props.area), [map, props.area.lat, props.area.lon, props.area.radius]);

  return (
    <div class="road-map-wrap">
      <div class="road-map" data-testid="road-map" role="region" aria-label="Map of road events" ref={el} />
      {failed && <Notice kind="warning">The map could not be drawn. The events are still listed and can be inspected.</Notice>}
      {noTiles && !failed && (
        <p class="hint" role="status">
          The background map could not be loaded: the events are drawn on a plain background.
        </p>
      )}
    </div>
  );
}
