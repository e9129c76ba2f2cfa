/**
 * Render-only: the image of a display opened from the Logs, above the log
 * rows. The picture is an `<img>` whose source `image.ts` built (PNG, JPEG or
 * SVG as a `data:` URL); the bundle's other types are never rendered.
 */

import * as React from 'react';

import type { IOpenedImage } from './image';
import { useTrans } from './translate';

export function ImageView(props: { opened: IOpenedImage; onClose: () => void }): JSX.Element {
  const trans = useTrans();
  const { opened } = props;
  const title = trans.__('[rank %1] %2', opened.rank, opened.mark);
  const image = opened.image;
  let body: JSX.Element;
  if (image) {
    body = (
      <img
        className="jp-Distributed-imageBody"
        src={image.src}
        alt={title}
        width={image.width ?? undefined}
        height={image.height ?? undefined}
      />
    );
  } else if (opened.error) {
    body = (
      <div className="jp-Distributed-imageError" role="alert">
        {opened.error}
      </div>
    );
  } else {
    body = <div className="jp-Distributed-imageLoading">{trans.__('Loading…')}</div>;
  }
  return (
    <section
      className="jp-Distributed-image"
      aria-label={trans.__('Image of display %1', opened.seq)}
      onKeyDown={e => {
        if (e.key === 'Escape') {
          props.onClose();
        }
      }}
    >
      <div className="jp-Distributed-imageBar">
        <span className="jp-Distributed-imageTitle">{title}</span>
        <button type="button" className="jp-mod-styled" onClick={props.onClose}>
          {trans.__('Close')}
        </button>
      </div>
      <div className="jp-Distributed-imageFrame">{body}</div>
    </section>
  );
}
